package kubetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeManifests: any bytes are split into objects that each have an
// apiVersion, a kind and a name, or refused with an error naming the
// document, never a panic.
func FuzzDecodeManifests(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "deploy", "kubernetes", "*.yaml"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("---\n---\n"))
	f.Add([]byte(`{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}`))
	f.Add([]byte("apiVersion: v1\nkind: Namespace\n---\nkind: [\n"))
	f.Add([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: 7}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := decodeManifests(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "document ") {
				t.Fatalf("error %q does not name the document", err)
			}
			return
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
				t.Fatalf("decoded an object without apiVersion, kind or name: %v", o.Object)
			}
		}
	})
}
