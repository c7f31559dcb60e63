package wire

import (
	"strconv"

	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/internal/jsonscan"
)

// WhatIfChange is one change of a what-if (POST /api/v1/whatif,
// docs/api.md#what-if): the method, path and body of the request it
// previews. Body is the change's "body" value as its bytes in the request
// (nil when absent), which the endpoint's own decoder reads as it reads a
// request body.
type WhatIfChange struct {
	Method string
	Path   string
	Body   []byte
}

// MaxWhatIfChanges bounds the changes of one what-if.
const MaxWhatIfChanges = 100

var (
	whatIfKeys       = []string{"changes"}
	whatIfChangeKeys = []string{"method", "path", "body"}
)

// DecodeWhatIf decodes a what-if's body, {"changes": [{"method", "path",
// "body"}, …]}: 1 to MaxWhatIfChanges changes, each with a string method
// and path and any JSON body. Which methods and paths a what-if takes is
// the endpoint's to check; the bodies are left to the decoders of the
// requests they belong to.
func DecodeWhatIf(data []byte) ([]WhatIfChange, error) {
	m, e := jsonpath.DecodeObject(data, "body")
	if e != nil {
		return nil, e
	}
	if e := jsonpath.CheckKeys("$", m, whatIfKeys, "a what-if"); e != nil {
		return nil, e
	}
	v, ok := m["changes"]
	if !ok {
		return nil, jsonpath.NewError(CodeMissingAttribute, "$.changes", "cannot preview a what-if without changes: want \"changes\": [{\"method\", \"path\", \"body\"}, …]")
	}
	a, e := jsonpath.Array("$.changes", v)
	if e != nil {
		return nil, e
	}
	if len(a) == 0 || len(a) > MaxWhatIfChanges {
		return nil, jsonpath.NewError(CodeInvalidValue, "$.changes", "cannot preview "+strconv.Itoa(len(a))+" changes: want 1 to "+strconv.Itoa(MaxWhatIfChanges))
	}
	out := make([]WhatIfChange, len(a))
	for i, cv := range a {
		p := jsonpath.Index("$.changes", i)
		c, e := jsonpath.Object(p, cv)
		if e != nil {
			return nil, e
		}
		if e := jsonpath.CheckKeys(p, c, whatIfChangeKeys, "a what-if's change"); e != nil {
			return nil, e
		}
		for _, k := range []string{"method", "path"} {
			x, ok := c[k]
			if !ok {
				return nil, jsonpath.NewError(CodeMissingAttribute, jsonpath.Key(p, k), "cannot preview change "+strconv.Itoa(i)+" without its "+k)
			}
			s, e := jsonpath.String(jsonpath.Key(p, k), x)
			if e != nil {
				return nil, e
			}
			if k == "method" {
				out[i].Method = s
			} else {
				out[i].Path = s
			}
		}
	}
	// The bodies as they are in the request: the values were checked
	// above, so this second scan meets valid JSON without duplicate keys.
	bodies(data, out)
	return out, nil
}

// bodies sets the Body of each change to the bytes of its "body" value in
// data, a what-if that DecodeWhatIf validated.
func bodies(data []byte, out []WhatIfChange) {
	var s jsonscan.Scanner
	s.Reset(data)
	s.OpenObject()
	for first := true; s.More('}', first); first = false {
		k, _ := s.Key()
		if string(k) != "changes" || !s.OpenArray() {
			s.Skip()
			continue
		}
		for i := 0; s.More(']', i == 0); i++ {
			s.OpenObject()
			for first := true; s.More('}', first); first = false {
				k, _ := s.Key()
				s.Peek()
				start := s.Pos()
				s.Skip()
				if string(k) == "body" {
					out[i].Body = data[start:s.Pos():s.Pos()]
				}
			}
		}
	}
}
