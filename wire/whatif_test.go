package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/internal/jsonpath"
)

func TestDecodeWhatIf(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []WhatIfChange
		code string
		path string
	}{
		{in: `{"changes": [{"method": "PATCH", "path": "/api/v1/pools/a", "body": {"weight": 3}}]}`,
			want: []WhatIfChange{{Method: "PATCH", Path: "/api/v1/pools/a", Body: []byte(`{"weight": 3}`)}}},
		{in: `{"changes":[{"path":"/api/v1/pools/a","method":"DELETE"},{"body" : [ 1 , "x" ] ,"method":"PUT","path":"p"}]}`,
			want: []WhatIfChange{{Method: "DELETE", Path: "/api/v1/pools/a"}, {Method: "PUT", Path: "p", Body: []byte(`[ 1 , "x" ]`)}}},
		{in: `{"changes": [{"method": "PATCH", "path": "/api/v1/config", "body": null}]}`,
			want: []WhatIfChange{{Method: "PATCH", Path: "/api/v1/config", Body: []byte(`null`)}}},
		{in: ``, code: CodeMalformedJSON, path: "$"},
		{in: `[]`, code: CodeWrongType, path: "$"},
		{in: `{}`, code: CodeMissingAttribute, path: "$.changes"},
		{in: `{"changes": [], "x": 1}`, code: CodeUnknownAttribute, path: "$.x"},
		{in: `{"changes": []}`, code: CodeInvalidValue, path: "$.changes"},
		{in: `{"changes": {}}`, code: CodeWrongType, path: "$.changes"},
		{in: `{"changes": [1]}`, code: CodeWrongType, path: "$.changes[0]"},
		{in: `{"changes": [{"method": "PATCH", "path": "/a"}, {"path": "/a"}]}`, code: CodeMissingAttribute, path: "$.changes[1].method"},
		{in: `{"changes": [{"method": "PATCH"}]}`, code: CodeMissingAttribute, path: "$.changes[0].path"},
		{in: `{"changes": [{"method": 1, "path": "/a"}]}`, code: CodeWrongType, path: "$.changes[0].method"},
		{in: `{"changes": [{"method": "PATCH", "path": "/a", "bdy": {}}]}`, code: CodeUnknownAttribute, path: "$.changes[0].bdy"},
		{in: `{"changes": [{"method": "PATCH", "path": "/a", "body": {"w": 1, "w": 2}}]}`, code: CodeDuplicateKey, path: "$.changes[0].body.w"},
		{in: `{"changes": [` + strings.Repeat(`{"method": "DELETE", "path": "/a"},`, MaxWhatIfChanges) + `{"method": "DELETE", "path": "/a"}]}`,
			code: CodeInvalidValue, path: "$.changes"},
	} {
		got, err := DecodeWhatIf([]byte(tc.in))
		if tc.code != "" {
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Path != tc.path {
				t.Errorf("%.60s: got %v, want %s at %s", tc.in, err, tc.code, tc.path)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// The what-if decoder never panics, reports an *Error with a code and a
// path, and what it accepts holds every change's method and path and, as
// its body, exactly the bytes of the JSON value the request gave it.
func FuzzDecodeWhatIf(f *testing.F) {
	for _, s := range []string{`{"changes": [{"method": "PATCH", "path": "/api/v1/pools/a", "body": {"weight": 3}}]}`,
		`{"changes":[{"path":"/api/v1/pools/a","method":"DELETE"},{"body":[1,"x",{"a":null}],"method":"PUT","path":"p"}]}`,
		`{"changes": [{"method": "PATCH", "path": "/api/v1/config", "body": {"fair_share_starvation_tolerance": 0.9}}]}`,
		`{"changes": [{"method": "PUT", "path": "/api/v1/pools/b", "body": "\u0062"}], "changes": []}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := DecodeWhatIf(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || e.Path == "" {
				t.Fatalf("%q: %#v", data, err)
			}
			return
		}
		m, e := jsonpath.DecodeObject(data, "body")
		if e != nil {
			t.Fatalf("%q: accepted, but it does not decode: %v", data, e)
		}
		a := m["changes"].([]any)
		if len(cs) != len(a) || len(cs) == 0 || len(cs) > MaxWhatIfChanges {
			t.Fatalf("%q: %d changes of %d", data, len(cs), len(a))
		}
		for i, c := range cs {
			cm := a[i].(map[string]any)
			if c.Method != cm["method"] || c.Path != cm["path"] {
				t.Fatalf("%q: change %d is %q %q", data, i, c.Method, c.Path)
			}
			want, has := cm["body"]
			if !has {
				if c.Body != nil {
					t.Fatalf("%q: change %d has body %q, want none", data, i, c.Body)
				}
				continue
			}
			got, e := jsonpath.Decode(c.Body, "body")
			if e != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: change %d's body %q decodes to %#v, %v; want %#v", data, i, c.Body, got, e, want)
			}
		}
	})
}
