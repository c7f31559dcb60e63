package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/core/tree"
)

func TestAppendSolveResultExact(t *testing.T) {
	var root snapshot.ElementResult
	root.Name = tree.RootName
	root.Attrs.FairShare.Total = resource.Share{1, 0.5, 0, 1e-07, 0}
	root.Attrs.Weight = 1
	root.Attrs.DominantResource = resource.CPU
	pool := snapshot.ElementResult{Name: "p"}
	pool.Attrs.Weight = 2
	pool.Attrs.DominantResource = resource.Memory
	pool.Attrs.Integral = fairshare.IntegralAttributes{
		Type: tree.GuaranteeBurst, AccumulatedVolume: [resource.Count]float64{0, 864000},
		AccumulatedResourceRatioVolume: 0.25, Capacity: [resource.Count]float64{0, 8640000},
		SpecifiedBurstRatio: 0.1, SpecifiedResourceFlowRatio: 0.05, TotalBurstRatio: 0.2, TotalResourceFlowRatio: 0.1,
		EstimatedBurstUsageDurationSeconds: math.Inf(1),
	}
	op := snapshot.ElementResult{Name: "o", IsOperation: true, FittingJobs: 3}
	op.Attrs.Weight = 0.5
	r := &snapshot.Result{Updates: []snapshot.UpdateResult{
		{Label: "first \"one\"", Elements: []snapshot.ElementResult{root, pool, op}},
		{Elements: []snapshot.ElementResult{root}},
	}}
	const z = `{"user_slots":0,"cpu":0,"gpu":0,"memory":0,"network":0}`
	const zeros = `"detailed":{"strong_guarantee":` + z + `,"integral_guarantee":` + z + `,"weight_proportional":` + z + `},` +
		`"usage_share":` + z + `,"demand_share":` + z + `,"limits_share":` + z + `,"strong_guarantee_share":` + z +
		`,"proposed_integral_share":` + z + `,"promised_guarantee_fair_share":` + z
	rootJSON := `{"fair_share":{"user_slots":1,"cpu":0.5,"gpu":0,"memory":1e-07,"network":0},` + zeros + `,"weight":1,"dominant_resource":"cpu"}`
	want := `{"updates":[{"label":"first \"one\"","elements":{"<Root>":` + rootJSON +
		`,"p":{"fair_share":` + z + `,` + zeros + `,"weight":2,"dominant_resource":"memory",` +
		`"integral_guarantee_type":"burst","accumulated_resource_volume":{"user_slots":0,"cpu":864000,"gpu":0,"memory":0,"network":0},` +
		`"accumulated_resource_ratio_volume":0.25,"integral_pool_capacity":{"user_slots":0,"cpu":8.64e+06,"gpu":0,"memory":0,"network":0},` +
		`"specified_burst_ratio":0.1,"specified_resource_flow_ratio":0.05,"total_burst_ratio":0.2,"total_resource_flow_ratio":0.1,` +
		`"estimated_burst_usage_duration_seconds":null}` +
		`,"o":{"fair_share":` + z + `,` + zeros + `,"weight":0.5,"dominant_resource":"user_slots","fitting_jobs":3}}},` +
		`{"elements":{"<Root>":` + rootJSON + `}}]}`
	got := AppendSolveResult([]byte("prefix"), r)
	if string(got) != "prefix"+want {
		t.Fatalf("got\n%s\nwant\n%s", got, "prefix"+want)
	}
	if !json.Valid(got[len("prefix"):]) {
		t.Fatalf("output is not valid JSON")
	}
}

// TestAppendSolveResultDifferential encodes random results and checks that
// encoding/json parses them into the structure built independently here.
func TestAppendSolveResultDifferential(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	for iter := range 200 {
		r := randomResult(rng)
		out := AppendSolveResult(nil, r)
		if !bytes.Equal(out, AppendSolveResult(nil, r)) {
			t.Fatalf("seed %d iter %d: output is not deterministic", seed, iter)
		}
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("seed %d iter %d: %v\n%s", seed, iter, err, out)
		}
		if want := expectedResult(r); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d iter %d:\ngot  %v\nwant %v\njson %s", seed, iter, got, want, out)
		}
		// Element order is the result's order.
		for i := range r.Updates {
			if names := elementOrder(t, out, i); !reflect.DeepEqual(names, namesOf(&r.Updates[i])) {
				t.Fatalf("seed %d iter %d update %d: element order %q, want %q", seed, iter, i, names, namesOf(&r.Updates[i]))
			}
		}
	}
}

var specialFloats = []float64{0, math.Copysign(0, -1), 1, 0.1, 1.0 / 3, 1e-300, 5e-324, 1e21, 1e-7, 123456789.125,
	math.MaxFloat64, -2.5, math.Inf(1), math.Inf(-1), math.NaN()}

var specialStrings = []string{"", "PoolA", "<Root>", "quote\"back\\slash", "ctl\x00\x01\x1f\n\r\t\b\f", "ünïcødé ✓ 😀",
	"sep\u2028\u2029", "bad\xffutf8\xc3", "</script>&"}

func randomFloat(rng *rand.Rand) float64 {
	switch rng.IntN(4) {
	case 0:
		return specialFloats[rng.IntN(len(specialFloats))]
	case 1:
		return math.Float64frombits(rng.Uint64())
	default:
		return rng.Float64()
	}
}

func randomFloats(rng *rand.Rand) (v [resource.Count]float64) {
	for i := range v {
		v[i] = randomFloat(rng)
	}
	return v
}

func randomShare(rng *rand.Rand) resource.Share { return resource.Share(randomFloats(rng)) }

func randomResult(rng *rand.Rand) *snapshot.Result {
	r := &snapshot.Result{Updates: make([]snapshot.UpdateResult, rng.IntN(4))}
	for i := range r.Updates {
		u := &r.Updates[i]
		if rng.IntN(2) == 0 {
			u.Label = specialStrings[rng.IntN(len(specialStrings))]
		}
		n := rng.IntN(6)
		for j := range n {
			e := snapshot.ElementResult{Name: "e" + strconv.Itoa(j), IsOperation: rng.IntN(2) == 0}
			if j < len(specialStrings) && rng.IntN(3) == 0 && utf8.ValidString(specialStrings[j]) {
				e.Name = specialStrings[j] + "#" + strconv.Itoa(j) // unique, valid UTF-8
			}
			if rng.IntN(2) == 0 {
				e.FittingJobs = rng.Int64N(1000)
			}
			a := &e.Attrs
			a.FairShare = fairshare.Detailed{Total: randomShare(rng), StrongGuarantee: randomShare(rng),
				IntegralGuarantee: randomShare(rng), WeightProportional: randomShare(rng)}
			a.PromisedGuaranteeFairShare.Total = randomShare(rng)
			a.UsageShare, a.DemandShare, a.LimitsShare = randomShare(rng), randomShare(rng), randomShare(rng)
			a.StrongGuaranteeShare, a.ProposedIntegralShare = randomShare(rng), randomShare(rng)
			a.DominantResource = resource.Kind(rng.IntN(resource.Count))
			a.Weight = randomFloat(rng)
			a.Integral = fairshare.IntegralAttributes{
				Type:                               tree.GuaranteeType(rng.IntN(3)),
				AccumulatedVolume:                  randomFloats(rng),
				AccumulatedResourceRatioVolume:     randomFloat(rng),
				Capacity:                           randomFloats(rng),
				SpecifiedBurstRatio:                randomFloat(rng),
				SpecifiedResourceFlowRatio:         randomFloat(rng),
				TotalBurstRatio:                    randomFloat(rng),
				TotalResourceFlowRatio:             randomFloat(rng),
				EstimatedBurstUsageDurationSeconds: randomFloat(rng),
			}
			u.Elements = append(u.Elements, e)
		}
	}
	return r
}

// expected* build what encoding/json must parse, written without the encoder.

func expectedNumber(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}

func expectedFloats(v [resource.Count]float64) map[string]any {
	m := map[string]any{}
	for k, x := range v {
		m[resource.Kind(k).String()] = expectedNumber(x)
	}
	return m
}

func expectedShare(s resource.Share) map[string]any { return expectedFloats(s) }

// expectedString is what a JSON round trip makes of s: invalid bytes become U+FFFD.
func expectedString(s string) string {
	var b []rune
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b = append(b, r) // RuneError for an invalid byte
		i += n
	}
	return string(b)
}

func expectedResult(r *snapshot.Result) any {
	ups := []any{}
	for i := range r.Updates {
		u := &r.Updates[i]
		els := map[string]any{}
		for j := range u.Elements {
			e := &u.Elements[j]
			a := &e.Attrs
			m := map[string]any{
				"fair_share": expectedShare(a.FairShare.Total),
				"detailed": map[string]any{
					"strong_guarantee":    expectedShare(a.FairShare.StrongGuarantee),
					"integral_guarantee":  expectedShare(a.FairShare.IntegralGuarantee),
					"weight_proportional": expectedShare(a.FairShare.WeightProportional),
				},
				"usage_share":                   expectedShare(a.UsageShare),
				"demand_share":                  expectedShare(a.DemandShare),
				"limits_share":                  expectedShare(a.LimitsShare),
				"strong_guarantee_share":        expectedShare(a.StrongGuaranteeShare),
				"proposed_integral_share":       expectedShare(a.ProposedIntegralShare),
				"promised_guarantee_fair_share": expectedShare(a.PromisedGuaranteeFairShare.Total),
				"weight":                        expectedNumber(a.Weight),
				"dominant_resource":             a.DominantResource.String(),
			}
			if e.IsOperation && e.FittingJobs > 0 {
				m["fitting_jobs"] = float64(e.FittingJobs)
			}
			if ig := &a.Integral; !e.IsOperation && ig.Type != tree.GuaranteeNone {
				m["integral_guarantee_type"] = ig.Type.String()
				m["accumulated_resource_volume"] = expectedFloats(ig.AccumulatedVolume)
				m["accumulated_resource_ratio_volume"] = expectedNumber(ig.AccumulatedResourceRatioVolume)
				m["integral_pool_capacity"] = expectedFloats(ig.Capacity)
				m["specified_burst_ratio"] = expectedNumber(ig.SpecifiedBurstRatio)
				m["specified_resource_flow_ratio"] = expectedNumber(ig.SpecifiedResourceFlowRatio)
				m["total_burst_ratio"] = expectedNumber(ig.TotalBurstRatio)
				m["total_resource_flow_ratio"] = expectedNumber(ig.TotalResourceFlowRatio)
				if ig.Type == tree.GuaranteeBurst {
					m["estimated_burst_usage_duration_seconds"] = expectedNumber(ig.EstimatedBurstUsageDurationSeconds)
				}
			}
			els[expectedString(e.Name)] = m
		}
		um := map[string]any{"elements": els}
		if u.Label != "" {
			um["label"] = expectedString(u.Label)
		}
		ups = append(ups, um)
	}
	return map[string]any{"updates": ups}
}

func namesOf(u *snapshot.UpdateResult) []string {
	names := []string{}
	for i := range u.Elements {
		names = append(names, expectedString(u.Elements[i].Name))
	}
	return names
}

// elementOrder returns the keys of updates[i].elements in document order.
func elementOrder(t *testing.T, out []byte, i int) []string {
	var doc struct {
		Updates []struct {
			Elements json.RawMessage `json:"elements"`
		} `json:"updates"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(doc.Updates[i].Elements))
	names := []string{}
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

func TestAppendError(t *testing.T) {
	f := func(e *Error, want string) {
		t.Helper()
		got := AppendError(nil, e)
		if string(got) != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		var body struct {
			Error map[string]string `json:"error"`
		}
		if err := json.Unmarshal(got, &body); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		wantMap := map[string]string{"code": e.Code, "message": expectedString(e.Message)}
		if e.Path != "" {
			wantMap["path"] = expectedString(e.Path)
		}
		if !reflect.DeepEqual(body.Error, wantMap) {
			t.Errorf("parsed %v, want %v", body.Error, wantMap)
		}
	}
	f(&Error{Code: CodeInvalidValue, Message: "cannot use -1: want a non-negative number", Path: "$.total_resources.cpu"},
		`{"error":{"code":"invalid_value","message":"cannot use -1: want a non-negative number","path":"$.total_resources.cpu"}}`)
	f(&Error{Code: CodeMalformedJSON, Message: "cannot parse JSON"},
		`{"error":{"code":"malformed_json","message":"cannot parse JSON"}}`)
	f(&Error{Code: CodeUnknownElement, Message: "cannot find \"X\"\n\ttab\x01", Path: `$.updates[0].set["X.demand"]`},
		`{"error":{"code":"unknown_element","message":"cannot find \"X\"\n\ttab\u0001","path":"$.updates[0].set[\"X.demand\"]"}}`)
	f(&Error{Code: "c", Message: "bad \xff byte, sep \u2028 ok ✓"},
		`{"error":{"code":"c","message":"bad \ufffd byte, sep \u2028 ok ✓"}}`)
	for _, s := range specialStrings {
		f(&Error{Code: "c", Message: s, Path: s}, string(AppendError(nil, &Error{Code: "c", Message: s, Path: s})))
	}
}

// TestDecodeErrorsEncode checks that decoder errors render as valid error bodies.
func TestDecodeErrorsEncode(t *testing.T) {
	_, err := DecodeSnapshot([]byte(`{"total_resources": {}, "tree": {}, "updates": [{"set": {"a\"b\n.demand": {}}}]}`))
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("got %v", err)
	}
	const want = `{"error":{"code":"unknown_element","message":"cannot find pool or operation \"a\\\"b\\n\"","path":"$.updates[0].set[\"a\\\"b\\n.demand\"]"}}`
	if got := AppendError(nil, e); string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
