package poolcrd

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzFromUnstructured: any Pool object the API server could hand over (a
// JSON object) is read or refused with an error naming the pool, never a
// panic; a spec read is turned into a server body and back into JSON.
func FuzzFromUnstructured(f *testing.F) {
	f.Add([]byte(`{"metadata": {"name": "p"}, "spec": {"weight": 2, "resourceLimits": {"cpu": "64", "memory": "16Gi"}}}`))
	f.Add([]byte(`{"metadata": {"name": "p"}, "spec": {"weight": "heavy"}}`))
	f.Add([]byte(`{"metadata": {"name": "p"}, "spec": {"resourceLimits": {"cpu": "lots"}}}`))
	f.Add([]byte(`{"metadata": {"name": "p"}, "spec": {"integralGuarantees": {"guaranteeType": "burst", "resourceFlow": {"cpu": "1e3"}, "burstGuaranteeResources": {"gpu": "9223372036854775808"}}}}`))
	f.Add([]byte(`{"metadata": {"name": "p"}, "spec": null}`))
	f.Add([]byte(`{"metadata": {"name": "p"}, "spec": {"strongGuaranteeResources": {"cpu": "-1"}, "fifoSortParameters": [1]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		u := &unstructured.Unstructured{Object: obj}
		name := func() (n string) {
			defer func() { _ = recover() }() // a metadata that is not an object has no name
			return u.GetName()
		}()
		if m, ok := obj["metadata"]; ok {
			if _, isMap := m.(map[string]any); !isMap {
				return // the API server never hands over such an object
			}
		}
		p, err := FromUnstructured(u)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cannot read pool "+name) {
				t.Fatalf("error %q does not name pool %q", err, name)
			}
			return
		}
		if _, err := json.Marshal(p.Spec.ToAPI()); err != nil {
			t.Fatalf("the server body of %s does not encode: %v", data, err)
		}
	})
}
