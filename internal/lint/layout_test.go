package lint

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeLayout: the README's Layout block lists every package of the
// module, each with a description, and names no folder that does not exist,
// so that a newcomer can trust it.
func TestReadmeLayout(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := layoutEntries(t, readme)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go binary on PATH")
	}
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel) + "/"
		if _, ok := listed[rel]; !ok {
			t.Errorf("README.md: the Layout block does not list the package %s", rel)
		}
	}
	for dir, what := range listed {
		if st, err := os.Stat(filepath.Join(root, dir)); err != nil || !st.IsDir() {
			t.Errorf("README.md: the Layout block lists %s, which is not a folder", dir)
		}
		if what == "" {
			t.Errorf("README.md: the Layout block lists %s without saying what it holds", dir)
		}
	}
}

// layoutEntries returns the folders of the first code block after "## Layout"
// with their descriptions.
func layoutEntries(t *testing.T, readme []byte) map[string]string {
	t.Helper()
	_, after, ok := bytes.Cut(readme, []byte("\n## Layout\n"))
	if !ok {
		t.Fatal("README.md: no ## Layout section")
	}
	_, block, ok := bytes.Cut(after, []byte("```\n"))
	if !ok {
		t.Fatal("README.md: no code block in the Layout section")
	}
	block, _, ok = bytes.Cut(block, []byte("```"))
	if !ok {
		t.Fatal("README.md: the Layout code block does not end")
	}
	entries := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(block))
	for sc.Scan() {
		dir, what, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !strings.HasSuffix(dir, "/") {
			t.Errorf("README.md: Layout line %q does not start with a folder", sc.Text())
			continue
		}
		if _, dup := entries[dir]; dup {
			t.Errorf("README.md: the Layout block lists %s twice", dir)
		}
		entries[dir] = strings.TrimSpace(what)
	}
	return entries
}
