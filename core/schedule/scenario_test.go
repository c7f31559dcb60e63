package schedule_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/coretest/scenario"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected outputs of the scripts under testdata/scenarios")

// TestScenarios runs the scenario scripts under testdata/scenarios
// (docs/semantics.md on a simulated cluster; the language is documented in
// core/coretest/scenario). Each script says what it shows in its header.
// Regenerate the expected outputs with
//
//	go test ./core/schedule/ -run TestScenarios -rewrite
//
// and review the diff.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("cannot find a scenario under testdata/scenarios")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			script, err := scenario.Run(path, string(data))
			if err != nil {
				t.Fatal(err)
			}
			if *rewrite {
				if out := script.Rewrite(); out != string(data) {
					if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			if d := script.Diff(); d != "" {
				t.Errorf("the outputs differ from the script's (- want, + got); if the change is intended, rewrite with\n\tgo test ./core/schedule/ -run TestScenarios -rewrite\nand review the diff:\n%s", d)
			}
		})
	}
}
