package settings_test

import (
	"math"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/settings"
	"github.com/fairsched/fairsched/core/tree"
)

type config struct {
	Period clock.Duration
	Ratio  float64
	Count  int64
	On     bool
	Mode   string
}

func testTable() *settings.Table[config] {
	return settings.NewTable("test",
		settings.Duration("period_s", func(c *config) *clock.Duration { return &c.Period }, 5*clock.Second, 0.01, 60, "A period."),
		settings.Number("group.ratio", func(c *config) *float64 { return &c.Ratio }, 0.5, 0, 1, true, "A ratio."),
		settings.Count("group.count", func(c *config) *int64 { return &c.Count }, 3, 0, resource.MaxAmount, "A count."),
		settings.Bool("on", func(c *config) *bool { return &c.On }, true, "A flag."),
		settings.Make(settings.Spec{Key: "mode", Kind: settings.KindChoice, Choices: []string{"a", "b"},
			Default: settings.Value{Choice: "a"}, Doc: "A choice."},
			func(c *config) settings.Value { return settings.Value{Choice: c.Mode} },
			func(c *config, v settings.Value) { c.Mode = v.Choice }),
		settings.Make[config](settings.Spec{Key: "compat", Kind: settings.KindBool, Ignored: true, Default: settings.Value{Bool: true},
			Doc: "Ignored."}, nil, nil),
	)
}

func TestWant(t *testing.T) {
	f := func(s settings.Spec, want string) {
		t.Helper()
		if got := s.Want(); got != want {
			t.Errorf("%+v: Want() = %q, want %q", s, got, want)
		}
	}
	inf := math.Inf(1)
	f(settings.Spec{Kind: settings.KindDuration, Min: 0.01, Max: 60}, "a number of seconds in [0.01, 60]")
	f(settings.Spec{Kind: settings.KindDuration, Max: 1e9}, "a number of seconds in [0, 1e9]")
	f(settings.Spec{Kind: settings.KindDuration, MinOpen: true, Max: inf}, "a positive number of seconds")
	f(settings.Spec{Kind: settings.KindNumber, MinOpen: true, Max: 1e6}, "a number in (0, 1e6]")
	f(settings.Spec{Kind: settings.KindNumber, Min: 1, Max: inf}, "a number of at least 1")
	f(settings.Spec{Kind: settings.KindNumber, Min: 1, MinOpen: true, Max: inf}, "a number above 1")
	f(settings.Spec{Kind: settings.KindNumber, Min: 1, Max: inf, Nullable: true, NullMeans: "unset"}, "null (unset) or a number of at least 1")
	f(settings.Spec{Kind: settings.KindCount, Max: resource.MaxAmount}, "a whole number in [0, 2^53]")
	f(settings.Spec{Kind: settings.KindCount, Min: 1, Max: 1 << 30, Nullable: true, NullMeans: "no bound"}, "null (no bound) or a whole number in [1, 2^30]")
	f(settings.Spec{Kind: settings.KindBool}, "true or false")
	f(settings.Spec{Kind: settings.KindChoice, Choices: []string{"a"}}, `"a"`)
	f(settings.Spec{Kind: settings.KindChoice, Choices: []string{"a", "b", "c"}}, `"a", "b" or "c"`)
	f(settings.Spec{Kind: settings.KindPartialResources}, "an object of resource amounts")
}

func TestObjectMember(t *testing.T) {
	f := func(key, obj, member string) {
		t.Helper()
		s := settings.Spec{Key: key}
		if s.Object() != obj || s.Member() != member {
			t.Errorf("%q: Object, Member = %q, %q; want %q, %q", key, s.Object(), s.Member(), obj, member)
		}
	}
	f("main_resource", "", "main_resource")
	f("integral_guarantees.smooth_period_s", "integral_guarantees", "smooth_period_s")
}

func TestCheck(t *testing.T) {
	f := func(s settings.Spec, v settings.Value, path string) {
		t.Helper()
		err := s.Check(v)
		switch {
		case path == "" && err != nil:
			t.Errorf("%+v: Check(%+v) = %v, want nil", s, v, err)
		case path != "" && (err == nil || err.Code != apierr.CodeInvalidValue || err.Path != path):
			t.Errorf("%+v: Check(%+v) = %v, want invalid_value at %q", s, v, err, path)
		}
	}
	num := func(x float64) settings.Value { return settings.Value{Number: x} }
	open := settings.Spec{Key: "k", Kind: settings.KindNumber, MinOpen: true, Max: 1}
	f(open, num(0), "k")
	f(open, num(1e-300), "")
	f(open, num(1), "")
	f(open, num(1.5), "k")
	f(open, num(math.NaN()), "k")
	f(open, settings.Value{Null: true}, "k")
	nullable := open
	nullable.Nullable = true
	f(nullable, settings.Value{Null: true}, "")
	unbounded := settings.Spec{Key: "k", Kind: settings.KindNumber, Min: 1, Max: math.Inf(1)}
	f(unbounded, num(math.MaxFloat64), "")
	f(unbounded, num(0.5), "k")
	count := settings.Spec{Key: "k", Kind: settings.KindCount, Max: 10}
	f(count, num(2.5), "k")
	f(count, num(10), "")
	choice := settings.Spec{Key: "k", Kind: settings.KindChoice, Choices: []string{"a"}}
	f(choice, settings.Value{Choice: "a"}, "")
	f(choice, settings.Value{Choice: "b"}, "k")
	res := settings.Spec{Key: "k", Kind: settings.KindResources}
	f(res, settings.Value{Resources: resource.Vec{resource.GPU: -1}}, "k.gpu")
	part := settings.Spec{Key: "g.k", Kind: settings.KindPartialResources}
	var p tree.PartialVec
	p.V[resource.Memory], p.Set[resource.Memory] = resource.MaxAmount+1, true
	f(part, settings.Value{Partial: p}, "g.k.memory")
	p.Set[resource.Memory] = false
	f(part, settings.Value{Partial: p}, "")
}

func TestTable(t *testing.T) {
	tb := testTable()
	var c config
	tb.ApplyDefaults(&c)
	if c != (config{Period: 5 * clock.Second, Ratio: 0.5, Count: 3, On: true, Mode: "a"}) {
		t.Fatalf("defaults %+v", c)
	}
	if err := tb.Check(&c); err != nil {
		t.Fatal(err)
	}
	st, ok := tb.Lookup("group.ratio")
	if !ok || st.Object() != "group" {
		t.Fatalf("Lookup(group.ratio) = %+v, %v", st, ok)
	}
	if _, ok := tb.Lookup("ratio"); ok {
		t.Fatal("Lookup finds a member without its object")
	}
	err := st.Set(&c, settings.Value{Number: 0})
	if ae, ok := err.(*apierr.Error); !ok || ae.Pkg != "test" || ae.Path != "group.ratio" ||
		ae.Message != "cannot use group.ratio 0: want a number in (0, 1]" || c.Ratio != 0.5 {
		t.Fatalf("Set out of range: %#v, ratio %v", err, c.Ratio)
	}
	// An ignored setting takes any valid value, stores nothing and reads
	// as its default.
	compat, _ := tb.Lookup("compat")
	if err := compat.Set(&c, settings.Value{Bool: false}); err != nil || !compat.Get(&c).Bool {
		t.Fatalf("ignored: %v, %+v", err, compat.Get(&c))
	}
	c.Count = -1
	if err := tb.Check(&c); err == nil || err.(*apierr.Error).Path != "group.count" {
		t.Fatalf("Check = %v, want the count", err)
	}
	doc := string(tb.AppendDoc(nil))
	for _, row := range []string{
		"| `period_s` | 5 | a number of seconds in [0.01, 60] | yes | A period. |\n",
		"| `group.count` | 3 | a whole number in [0, 2^53] | yes | A count. |\n",
		"| `mode` | \"a\" | \"a\" or \"b\" | yes | A choice. |\n",
		"| `compat` | true | true or false | ignored | Ignored. |\n",
	} {
		if !strings.Contains(doc, row) {
			t.Errorf("AppendDoc lacks %q:\n%s", row, doc)
		}
	}
}

// NewTable refuses a table that is not well formed: the table is code.
func TestNewTablePanics(t *testing.T) {
	f := func(what string, rows ...settings.Setting[config]) {
		t.Helper()
		defer func() {
			if r := recover(); r == nil || !strings.HasPrefix(r.(string), "BUG: settings:") {
				t.Errorf("%s: recovered %v, want a BUG panic", what, r)
			}
		}()
		settings.NewTable("test", rows...)
	}
	on := func(key string) settings.Setting[config] {
		return settings.Bool(key, func(c *config) *bool { return &c.On }, false, "")
	}
	f("duplicate key", on("a"), on("a"))
	f("nested twice", on("g.h.a"))
	f("object not adjacent", on("g.a"), on("b"), on("g.c"))
	f("key and object", on("g"), on("g.a"))
	f("default out of range", settings.Number("r", func(c *config) *float64 { return &c.Ratio }, 2, 0, 1, false, ""))
	f("no accessors", settings.Make[config](settings.Spec{Key: "x", Kind: settings.KindBool}, nil, nil))
}
