// Package settings holds what the core's configuration tables share: the
// kinds of value a setting takes, a setting's description (Spec) with its
// range check and the sentence saying what it accepts (Want), the row that
// binds a description to a field of a config (Setting), and the table that
// gives defaults, validation and the Markdown reference (Table).
//
// Each layer that owns a configuration declares its own table of its own
// config type: core/schedule the scheduler's settings (schedule.Settings),
// core/fairshare the fair-share update's (fairshare.Settings). The JSON
// decoders and encoders (wire) and docs/configuration.md are driven by
// those tables, so a setting is added by adding one row; the wire checks JSON
// types only and leaves ranges and defaults to the tables.
//
// A key with a dot names a member of a nested object:
// "integral_guarantees.smooth_period_s" is the key smooth_period_s of the
// object under integral_guarantees (one level of nesting; the rows of one
// object are adjacent in their table).
//
// Tables are built once, at package initialisation, and only read
// afterwards: they are safe for concurrent use. Get, Set, Lookup and Check
// allocate nothing unless they fail; Want and AppendDoc build text.
//
// NB: a leaf of the core below every layer that owns a config
// (internal/lint): it knows values (core/resource, core/tree's PartialVec,
// core/clock's Duration) and the error type (core/apierr), never a layer.
package settings

import (
	"math"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Kind is the type of a setting's value.
type Kind uint8

// Setting kinds.
const (
	// KindDuration is a span of time, written in seconds (the key ends in _s).
	KindDuration Kind = iota
	// KindNumber is a float64.
	KindNumber
	// KindCount is a whole number.
	KindCount
	// KindBool is true or false.
	KindBool
	// KindChoice is one of the setting's Choices.
	KindChoice
	// KindResources is a full resource vector (resource.Vec).
	KindResources
	// KindPartialResources is a resource vector whose components may be
	// unspecified (tree.PartialVec).
	KindPartialResources
)

// Value is a setting's value in the representation of its kind: Number for
// KindDuration (in seconds), KindNumber and KindCount; Bool; Choice;
// Resources; Partial. Null is true for the JSON null of a Nullable setting.
// Values are comparable with ==.
type Value struct {
	Null      bool
	Number    float64
	Bool      bool
	Choice    string
	Resources resource.Vec
	Partial   tree.PartialVec
}

// Spec describes a setting: everything about it but where its value lives.
type Spec struct {
	// Key is the JSON key of the setting in its config object; a dotted key
	// ("integral_guarantees.smooth_period_s") names a member of a nested
	// object (Object, Member).
	Key  string
	Kind Kind
	// Min and Max bound a duration (in seconds), number or count; MinOpen
	// excludes Min itself. Max may be +Inf: no upper bound.
	Min, Max float64
	MinOpen  bool
	// Nullable settings accept null; NullMeans says what it stands for.
	Nullable  bool
	NullMeans string
	// Choices are the accepted strings of a KindChoice setting.
	Choices []string
	// Startup settings can only be set when the scheduler is created
	// (fairsched serve --config), never by PATCH.
	Startup bool
	// Ignored settings are accepted, for compatibility with YTsaurus tree
	// configs, and have no effect: their value is not stored, Get answers
	// the Default and encoders leave them out.
	Ignored bool
	// Doc is one sentence for the configuration reference.
	Doc string
	// Default is the value a config starts with.
	Default Value
}

// Object returns the nested object a dotted key is a member of
// ("integral_guarantees"), or "" for a key of the config object itself.
func (s *Spec) Object() string {
	obj, _, _ := strings.Cut(s.Key, ".")
	if obj == s.Key {
		return ""
	}
	return obj
}

// Member returns the key inside Object ("smooth_period_s"): Key itself when
// Object is "".
func (s *Spec) Member() string {
	_, m, ok := strings.Cut(s.Key, ".")
	if !ok {
		return s.Key
	}
	return m
}

// Check validates v against the setting's kind and range. The error's Path
// is the key (or key.resource for a resource out of range) and its message
// says what the setting wants (Want); Pkg is left for the table to fill.
func (s *Spec) Check(v Value) *apierr.Error {
	if v.Null {
		if !s.Nullable {
			return s.invalid("null")
		}
		return nil
	}
	switch s.Kind {
	case KindDuration, KindNumber, KindCount:
		x := v.Number
		ok := x == x && x <= s.Max && (x > s.Min || !s.MinOpen && x == s.Min)
		if s.Kind == KindCount && x != math.Trunc(x) {
			ok = false
		}
		if !ok {
			return s.invalid(strconv.FormatFloat(x, 'g', -1, 64))
		}
	case KindChoice:
		for _, c := range s.Choices {
			if v.Choice == c {
				return nil
			}
		}
		return s.invalid(strconv.Quote(v.Choice))
	case KindResources:
		for k, x := range v.Resources {
			if x < 0 || x > resource.MaxAmount {
				return s.invalidAmount(resource.Kind(k), x)
			}
		}
	case KindPartialResources:
		for k, x := range v.Partial.V {
			if v.Partial.Set[k] && (x < 0 || x > resource.MaxAmount) {
				return s.invalidAmount(resource.Kind(k), x)
			}
		}
	}
	return nil
}

func (s *Spec) invalid(v string) *apierr.Error {
	return &apierr.Error{Code: apierr.CodeInvalidValue, Path: s.Key,
		Message: "cannot use " + s.Key + " " + v + ": want " + s.Want()}
}

func (s *Spec) invalidAmount(k resource.Kind, x int64) *apierr.Error {
	return &apierr.Error{Code: apierr.CodeInvalidValue, Path: s.Key + "." + k.String(),
		Message: "cannot use " + k.String() + " " + strconv.FormatInt(x, 10) + " for " + s.Key +
			": want a non-negative amount of at most 2^53"}
}

// Want describes the values the setting accepts, for error messages and the
// configuration reference: "a number of seconds in [0.01, 60]", "a positive
// number of seconds", "null (unset) or a number of at least 1".
func (s *Spec) Want() string {
	var w string
	switch s.Kind {
	case KindDuration:
		w = s.bounded("a number of seconds")
	case KindNumber:
		w = s.bounded("a number")
	case KindCount:
		w = s.bounded("a whole number")
	case KindBool:
		w = "true or false"
	case KindChoice:
		for i, c := range s.Choices {
			switch {
			case i == 0:
			case i == len(s.Choices)-1:
				w += " or "
			default:
				w += ", "
			}
			w += strconv.Quote(c)
		}
	case KindResources, KindPartialResources:
		w = "an object of resource amounts"
	}
	if s.Nullable {
		w = "null (" + s.NullMeans + ") or " + w
	}
	return w
}

// bounded appends the range to what ("a number"): " in [Min, Max]" (or
// "(Min, Max]"), and without an upper bound "a positive number", "a number
// above Min" or "a number of at least Min".
func (s *Spec) bounded(what string) string {
	if math.IsInf(s.Max, 1) {
		switch {
		case s.MinOpen && s.Min == 0:
			return "a positive" + strings.TrimPrefix(what, "a")
		case s.MinOpen:
			return what + " above " + formatBound(s.Min)
		}
		return what + " of at least " + formatBound(s.Min)
	}
	open := "["
	if s.MinOpen {
		open = "("
	}
	return what + " in " + open + formatBound(s.Min) + ", " + formatBound(s.Max) + "]"
}

// formatBound formats a range bound with 2^53 and 2^30 spelled so and powers
// of ten from 1e6 as 1eN.
func formatBound(x float64) string {
	switch x {
	case resource.MaxAmount:
		return "2^53"
	case 1 << 30:
		return "2^30"
	}
	if e := math.Log10(x); x >= 1e6 && e == math.Trunc(e) {
		return "1e" + strconv.Itoa(int(e)) // not strconv's "1e+06"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// appendDocValue appends v as the configuration reference shows a value of
// the setting: null, a number, true or false, a quoted choice, or the
// non-zero amounts of a resource vector ({user_slots: 1, cpu: 1}), cpu in
// cores.
func (s *Spec) appendDocValue(dst []byte, v Value) []byte {
	if v.Null {
		return append(dst, "null"...)
	}
	switch s.Kind {
	case KindDuration, KindNumber, KindCount:
		return strconv.AppendFloat(dst, v.Number, 'g', -1, 64)
	case KindBool:
		return strconv.AppendBool(dst, v.Bool)
	case KindChoice:
		return strconv.AppendQuote(dst, v.Choice)
	case KindResources:
		dst = append(dst, '{')
		first := true
		for k, x := range v.Resources {
			if x == 0 {
				continue
			}
			if !first {
				dst = append(dst, ", "...)
			}
			first = false
			dst = append(dst, resource.Kind(k).String()...)
			dst = append(dst, ": "...)
			if resource.Kind(k) == resource.CPU {
				dst = strconv.AppendFloat(dst, float64(x)/resource.CPUScale, 'g', -1, 64)
			} else {
				dst = strconv.AppendInt(dst, x, 10)
			}
		}
		return append(dst, '}')
	}
	return append(dst, "{}"...)
}

// A Setting is one row of the table of config type C: a Spec and the field of
// C it reads and writes. Rows are made by Make and the constructors below and
// become usable once a Table holds them.
type Setting[C any] struct {
	Spec
	pkg string // the table's, the Pkg of its errors
	get func(*C) Value
	set func(*C, Value)
}

// Make returns the row of spec whose value get reads from a config and set
// writes to it. set is called with checked values only; Null only when the
// setting is Nullable. Ignored settings take nil for both.
func Make[C any](spec Spec, get func(*C) Value, set func(*C, Value)) Setting[C] {
	return Setting[C]{Spec: spec, get: get, set: set}
}

// Duration returns the row of a clock.Duration field: seconds in [lo, hi],
// rounded to the nearest microsecond when set.
func Duration[C any](key string, field func(*C) *clock.Duration, def clock.Duration, lo, hi float64, doc string) Setting[C] {
	return Make(Spec{Key: key, Kind: KindDuration, Min: lo, Max: hi, Doc: doc, Default: Value{Number: def.Seconds()}},
		func(c *C) Value { return Value{Number: field(c).Seconds()} },
		func(c *C, v Value) { *field(c) = clock.DurationFromSeconds(v.Number) })
}

// Seconds returns the row of a duration kept as float64 seconds, stored as
// given: in [lo, hi], (lo, hi] when minOpen.
func Seconds[C any](key string, field func(*C) *float64, def, lo, hi float64, minOpen bool, doc string) Setting[C] {
	s := Number(key, field, def, lo, hi, minOpen, doc)
	s.Kind = KindDuration
	return s
}

// Number returns the row of a float64 field in [lo, hi], (lo, hi] when
// minOpen.
func Number[C any](key string, field func(*C) *float64, def, lo, hi float64, minOpen bool, doc string) Setting[C] {
	return Make(Spec{Key: key, Kind: KindNumber, Min: lo, Max: hi, MinOpen: minOpen, Doc: doc, Default: Value{Number: def}},
		func(c *C) Value { return Value{Number: *field(c)} },
		func(c *C, v Value) { *field(c) = v.Number })
}

// Count returns the row of an int64 field holding a whole number in [lo, hi].
func Count[C any](key string, field func(*C) *int64, def int64, lo, hi float64, doc string) Setting[C] {
	return Make(Spec{Key: key, Kind: KindCount, Min: lo, Max: hi, Doc: doc, Default: Value{Number: float64(def)}},
		func(c *C) Value { return Value{Number: float64(*field(c))} },
		func(c *C, v Value) { *field(c) = int64(v.Number) })
}

// Bool returns the row of a bool field.
func Bool[C any](key string, field func(*C) *bool, def bool, doc string) Setting[C] {
	return Make(Spec{Key: key, Kind: KindBool, Doc: doc, Default: Value{Bool: def}},
		func(c *C) Value { return Value{Bool: *field(c)} },
		func(c *C, v Value) { *field(c) = v.Bool })
}

// Get returns the setting's value in c (the Default for an Ignored setting).
func (s *Setting[C]) Get(c *C) Value {
	if s.Ignored {
		return s.Default
	}
	return s.get(c)
}

// Set validates v against the setting's range and stores it in c; on error c
// is unchanged. The error is an *apierr.Error whose Path is the key (Check).
// An Ignored setting checks v and stores nothing. Rules that relate settings
// are the owning package's ValidateConfig's.
func (s *Setting[C]) Set(c *C, v Value) error {
	if err := s.check(v); err != nil {
		return err
	}
	if !s.Ignored {
		s.set(c, v)
	}
	return nil
}

func (s *Setting[C]) check(v Value) *apierr.Error {
	err := s.Spec.Check(v)
	if err != nil {
		err.Pkg = s.pkg
	}
	return err
}

// Table is the settings table of config type C, in the order encoders list
// the keys.
type Table[C any] struct {
	rows []Setting[C]
}

// NewTable returns the table of rows; pkg names the owning package in the
// errors of Set and Check ("schedule"). It panics (BUG) when two rows share a
// key, a key nests objects twice, the rows of a nested object are not
// adjacent, a key is also an object's name, a row lacks its accessors or a
// default fails its own check: the table is code.
func NewTable[C any](pkg string, rows ...Setting[C]) *Table[C] {
	t := &Table[C]{rows: rows}
	keys, objects := map[string]bool{}, map[string]bool{}
	open := ""
	for i := range t.rows {
		s := &t.rows[i]
		s.pkg = pkg
		if keys[s.Key] {
			panic("BUG: settings: " + pkg + " has the key " + s.Key + " twice")
		}
		keys[s.Key] = true
		if strings.Contains(s.Member(), ".") {
			panic("BUG: settings: " + pkg + "'s " + s.Key + " nests objects twice")
		}
		if obj := s.Object(); obj != open {
			if objects[obj] {
				panic("BUG: settings: the rows of " + pkg + "'s object " + obj + " are not adjacent")
			}
			objects[obj], open = obj != "", obj
		}
		if !s.Ignored && (s.get == nil || s.set == nil) {
			panic("BUG: settings: " + pkg + "'s " + s.Key + " has no accessors")
		}
		if err := s.Spec.Check(s.Default); err != nil {
			panic("BUG: settings: " + pkg + "'s default: " + err.Message)
		}
	}
	for obj := range objects {
		if keys[obj] {
			panic("BUG: settings: " + pkg + " has " + obj + " as a key and as an object")
		}
	}
	return t
}

// Rows returns the table's rows in order. The slice is shared: callers must
// not modify it.
func (t *Table[C]) Rows() []Setting[C] { return t.rows }

// Lookup returns the row with the key k (dotted for a member of a nested
// object).
func (t *Table[C]) Lookup(k string) (*Setting[C], bool) {
	for i := range t.rows {
		if t.rows[i].Key == k {
			return &t.rows[i], true
		}
	}
	return nil, false
}

// ApplyDefaults sets every setting of c to its default.
func (t *Table[C]) ApplyDefaults(c *C) {
	for i := range t.rows {
		if s := &t.rows[i]; !s.Ignored {
			s.set(c, s.Default)
		}
	}
}

// Check checks every setting of c against its range and returns the first
// error, an *apierr.Error as Set's.
func (t *Table[C]) Check(c *C) error {
	for i := range t.rows {
		s := &t.rows[i]
		if err := s.check(s.Get(c)); err != nil {
			return err
		}
	}
	return nil
}

// AppendDoc appends the configuration reference of the table as a Markdown
// table: key (dotted for members of nested objects), default, what it
// accepts, whether it may change at run time, what it does.
func (t *Table[C]) AppendDoc(dst []byte) []byte {
	dst = append(dst, "| key | default | accepts | at run time | what it does |\n|---|---|---|---|---|\n"...)
	for i := range t.rows {
		s := &t.rows[i]
		dst = append(dst, "| `"...)
		dst = append(dst, s.Key...)
		dst = append(dst, "` | "...)
		dst = s.appendDocValue(dst, s.Default)
		dst = append(dst, " | "...)
		dst = append(dst, s.Want()...)
		switch {
		case s.Ignored:
			dst = append(dst, " | ignored | "...)
		case s.Startup:
			dst = append(dst, " | no (start-up only) | "...)
		default:
			dst = append(dst, " | yes | "...)
		}
		dst = append(dst, s.Doc...)
		dst = append(dst, " |\n"...)
	}
	return dst
}
