// Package conformance runs the reference vectors of testdata/conformance
// through the same path as `fairsched solve`: decode, solve, encode.
//
// The vectors are numbers from the YTsaurus scheduler's own unit tests
// (yt/yt/library/vector_hdrf/unittests/fair_share_update_ut.cpp, cited in
// each file's "source"); see testdata/conformance/README.md.
package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/wire"
)

type vector struct {
	Name      string                                       `json:"name"`
	Source    string                                       `json:"source"`
	Snapshot  json.RawMessage                              `json:"snapshot"`
	Expected  map[string]map[string]map[string]interface{} `json:"expected"`
	Tolerance float64                                      `json:"tolerance"`
}

// solveJSON runs a snapshot through decode, solve and encode, and parses the
// output back into generic JSON.
func solveJSON(t *testing.T, snap []byte) map[string]interface{} {
	t.Helper()
	s, err := wire.DecodeSnapshot(snap)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	r, err := snapshot.Solve(s)
	if err != nil {
		t.Fatalf("solve: %v", err)
	}
	out := wire.AppendSolveResult(nil, r)
	var got map[string]interface{}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return got
}

func compare(exp, got interface{}, tol float64, path string, errs *[]string) {
	switch e := exp.(type) {
	case map[string]interface{}:
		g, _ := got.(map[string]interface{})
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var gv interface{} = nil
			if g != nil {
				gv = g[k]
			}
			if gv == nil {
				if _, isNum := e[k].(float64); isNum {
					gv = 0.0
				}
			}
			compare(e[k], gv, tol, path+"."+k, errs)
		}
	case float64:
		g, ok := got.(float64)
		if !ok || math.IsNaN(g) || math.Abs(g-e) > tol+1e-12 {
			*errs = append(*errs, fmt.Sprintf("%s: expected %v, got %v", path, e, got))
		}
	}
}

func TestConformance(t *testing.T) {
	files, err := filepath.Glob("../testdata/conformance/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance vectors found: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v vector
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		t.Run(v.Name, func(t *testing.T) {
			got := solveJSON(t, v.Snapshot)
			ups, _ := got["updates"].([]interface{})
			var errs []string
			for idx, elems := range v.Expected {
				i, _ := strconv.Atoi(idx)
				if i < 0 {
					i += len(ups)
				}
				if i < 0 || i >= len(ups) {
					t.Fatalf("update %s missing (have %d)", idx, len(ups))
				}
				gotElems, _ := ups[i].(map[string]interface{})["elements"].(map[string]interface{})
				for el, attrs := range elems {
					ge, ok := gotElems[el]
					if !ok {
						errs = append(errs, fmt.Sprintf("update %s: element %s missing", idx, el))
						continue
					}
					compare(map[string]interface{}(attrs), ge, v.Tolerance, "u"+idx+"."+el, &errs)
				}
			}
			sort.Strings(errs)
			for _, e := range errs {
				t.Error(e)
			}
			if len(errs) > 0 {
				t.Logf("source: %s", v.Source)
			}
		})
	}
}
