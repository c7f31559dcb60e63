package fairshare_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/settings"
	"github.com/fairsched/fairsched/core/tree"
)

// The defaults of docs/configuration.md, as they were before the table.
func TestDefaultConfig(t *testing.T) {
	want := fairshare.Config{
		MainResource:                  resource.CPU,
		SmoothPeriodS:                 60,
		PoolCapacitySaturationPeriodS: 86400,
		RelaxedShareMultiplierLimit:   3,
		EnableImprovedFitFactor:       true,
	}
	c := fairshare.DefaultConfig()
	if c != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", c, want)
	}
	if err := fairshare.ValidateConfig(&c); err != nil {
		t.Fatal(err)
	}
}

// otherValue returns a valid value of st other than its default.
func otherValue(st *fairshare.Setting) settings.Value {
	d := st.Default
	switch st.Kind {
	case settings.KindBool:
		return settings.Value{Bool: !d.Bool}
	case settings.KindChoice:
		for _, c := range st.Choices {
			if c != d.Choice {
				return settings.Value{Choice: c}
			}
		}
	case settings.KindDuration, settings.KindNumber:
		if d.Null {
			return settings.Value{Number: st.Min + 0.5}
		}
		if math.IsInf(st.Max, 1) {
			return settings.Value{Number: d.Number*2 + 0.5}
		}
		return settings.Value{Number: (st.Min + st.Max) / 2}
	}
	panic("no other value for " + st.Key)
}

// Every field of Config is a row of the table: setting every row to another
// value than its default changes every field.
func TestSettingsCoverConfig(t *testing.T) {
	def := fairshare.DefaultConfig()
	c := def
	for i := range fairshare.Settings() {
		st := &fairshare.Settings()[i]
		if st.Ignored {
			continue
		}
		v := otherValue(st)
		if err := st.Set(&c, v); err != nil {
			t.Fatalf("%s: %v", st.Key, err)
		}
		if got := st.Get(&c); got != v {
			t.Fatalf("%s: Get = %+v after Set %+v", st.Key, got, v)
		}
	}
	cv, dv := reflect.ValueOf(c), reflect.ValueOf(def)
	for i := range cv.NumField() {
		if reflect.DeepEqual(cv.Field(i).Interface(), dv.Field(i).Interface()) {
			t.Errorf("Config.%s is set by no row of the settings table", cv.Type().Field(i).Name)
		}
	}
	if err := fairshare.ValidateConfig(&c); err != nil {
		t.Fatal(err)
	}
}

func TestValidateConfig(t *testing.T) {
	f := func(change func(*fairshare.Config), path string) {
		t.Helper()
		c := fairshare.DefaultConfig()
		change(&c)
		err := fairshare.ValidateConfig(&c)
		ae, ok := err.(*apierr.Error)
		if !ok || ae.Code != apierr.CodeInvalidValue || ae.Path != path || ae.Pkg != "fairshare" {
			t.Errorf("ValidateConfig(%+v) = %#v, want invalid_value at %q", c, err, path)
		}
	}
	f(func(c *fairshare.Config) { c.MainResource = resource.Count }, "main_resource")
	f(func(c *fairshare.Config) { c.SmoothPeriodS = 0 }, "integral_guarantees.smooth_period_s")
	f(func(c *fairshare.Config) { c.PoolCapacitySaturationPeriodS = -1 }, "integral_guarantees.pool_capacity_saturation_period_s")
	f(func(c *fairshare.Config) { c.RelaxedShareMultiplierLimit = 11 }, "integral_guarantees.relaxed_share_multiplier_limit")
	f(func(c *fairshare.Config) { c.InferWeightFromGuaranteesShareMultiplier = tree.Some(0.5) },
		"infer_weight_from_guarantees_share_multiplier")
}
