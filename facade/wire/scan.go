package wire

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/internal/jsonpath"
)

// scanner is a strict, allocation-free JSON tokenizer over one request body,
// for the decoders of the hot path (DecodeHeartbeat). It accepts exactly
// RFC 8259 JSON; strings with escapes are unescaped into scratch, so a
// returned string's bytes are valid only until the next call.
//
// NB: goccy/go-json allocates once per decoded string and once per value of
// a type with its own UnmarshalJSON (measured: 12 allocations for the
// heartbeat example of api.md §4, ~100 for a node with 30 allocations), so
// the heartbeat, which must cost ≤ 2 allocations a request, is scanned here.
// TestHeartbeatDifferential checks it against encoding/json and go-json.
type scanner struct {
	data    []byte
	pos     int
	scratch []byte
	// err is the first error; the scanner stops at it.
	err *Error
	// depth bounds nesting, for bodies that are mostly brackets.
	depth int
}

const maxDepth = 64

func (s *scanner) reset(data []byte) {
	s.data, s.pos, s.err, s.depth = data, 0, nil, 0
	s.scratch = s.scratch[:0]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) && isSpace(s.data[s.pos]) {
		s.pos++
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// syntax records a malformed-JSON error at the current position.
func (s *scanner) syntax(what string) {
	if s.err != nil {
		return
	}
	if s.pos >= len(s.data) {
		s.err = jsonpath.Malformed("unexpected end of input")
		return
	}
	s.err = jsonpath.SyntaxAt(s.data[:s.pos], what)
}

// fail records err unless an error is recorded already.
func (s *scanner) fail(err *Error) {
	if s.err == nil {
		s.err = err
	}
}

// consume skips c (after spaces) or records a syntax error.
func (s *scanner) consume(c byte, what string) bool {
	if s.peek() != c {
		s.syntax(what)
		return false
	}
	s.pos++
	return true
}

// kind classifies the next value for type errors.
type kind uint8

const (
	kindBad kind = iota
	kindObject
	kindArray
	kindString
	kindNumber
	kindTrue
	kindFalse
	kindNull
)

func (s *scanner) next() kind {
	switch c := s.peek(); {
	case c == '{':
		return kindObject
	case c == '[':
		return kindArray
	case c == '"':
		return kindString
	case c == '-' || c >= '0' && c <= '9':
		return kindNumber
	case c == 't':
		return kindTrue
	case c == 'f':
		return kindFalse
	case c == 'n':
		return kindNull
	}
	return kindBad
}

// wrongType records a wrong_type error for the value at the current
// position, described as jsonpath.Describe describes decoded values.
func (s *scanner) wrongType(path lazyPath, want string) {
	if s.err != nil {
		return
	}
	start := s.pos
	var desc string
	switch s.next() {
	case kindObject:
		desc = "an object"
	case kindArray:
		desc = "an array"
	case kindTrue:
		desc = "true"
	case kindFalse:
		desc = "false"
	case kindNull:
		desc = "null"
	case kindNumber:
		tok, _ := s.numberToken()
		desc = string(tok)
	case kindString:
		b, ok := s.str()
		if ok {
			desc = jsonpath.Describe(string(b))
		}
	default:
		if s.pos < len(s.data) {
			s.syntax("invalid character " + strconv.QuoteRune(rune(s.data[s.pos])) + " looking for beginning of value")
		} else {
			s.syntax("")
		}
		return
	}
	if s.err != nil {
		return
	}
	s.pos = start
	s.err = jsonpath.NewError(CodeWrongType, path.String(), "cannot use "+desc+": want "+want)
}

// literal consumes true, false or null.
func (s *scanner) literal(lit string) bool {
	s.skipSpace()
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		s.syntax("invalid literal")
		return false
	}
	s.pos += len(lit)
	return true
}

// str consumes a string and returns its unescaped bytes: a slice of the
// input when it has no escape, else of scratch (valid until the next call).
// Invalid UTF-8 and lone surrogates are kept as U+FFFD, as encoding/json does.
// stringAt reads the next value, which must be a string, reporting a wrong
// type at path with want otherwise. The bytes are valid until the next read.
func (s *scanner) stringAt(path lazyPath, want string) ([]byte, bool) {
	if s.next() != kindString {
		s.wrongType(path, want)
		return nil, false
	}
	return s.str()
}

func (s *scanner) str() ([]byte, bool) {
	if s.peek() != '"' {
		s.syntax("want a string")
		return nil, false
	}
	s.pos++
	start := s.pos
	var high byte // the OR of the bytes: ≥ 0x80 if any is not ASCII
	for i := s.pos; i < len(s.data); i++ {
		c := s.data[i]
		high |= c
		switch {
		case c == '"':
			s.pos = i + 1
			b := s.data[start:i]
			if high >= utf8.RuneSelf && !utf8.Valid(b) {
				return s.unescape(b), true
			}
			return b, true
		case c == '\\':
			return s.escaped(start)
		case c < 0x20:
			s.pos = i
			s.syntax("invalid control character in string")
			return nil, false
		}
	}
	s.pos = len(s.data)
	s.syntax("unterminated string")
	return nil, false
}

// unescape copies b into scratch replacing invalid UTF-8 with U+FFFD.
func (s *scanner) unescape(b []byte) []byte {
	s.scratch = s.scratch[:0]
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		s.scratch = utf8.AppendRune(s.scratch, r)
		b = b[n:]
	}
	return s.scratch
}

// escaped scans a string with escapes starting at start (after the quote).
func (s *scanner) escaped(start int) ([]byte, bool) {
	s.scratch = s.scratch[:0]
	i := start
	for i < len(s.data) {
		c := s.data[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return s.scratch, true
		case c < 0x20:
			s.pos = i
			s.syntax("invalid control character in string")
			return nil, false
		case c == '\\':
			if i+1 >= len(s.data) {
				s.pos = len(s.data)
				s.syntax("unterminated string")
				return nil, false
			}
			e := s.data[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				s.scratch = append(s.scratch, e)
			case 'b':
				s.scratch = append(s.scratch, '\b')
			case 'f':
				s.scratch = append(s.scratch, '\f')
			case 'n':
				s.scratch = append(s.scratch, '\n')
			case 'r':
				s.scratch = append(s.scratch, '\r')
			case 't':
				s.scratch = append(s.scratch, '\t')
			case 'u':
				r, ok := hex4(s.data, i)
				if !ok {
					s.pos = i
					s.syntax("invalid \\u escape in string")
					return nil, false
				}
				i += 4
				if utf16.IsSurrogate(r) {
					r2, ok2 := rune(-1), false
					if i+6 <= len(s.data) && s.data[i] == '\\' && s.data[i+1] == 'u' {
						r2, ok2 = hex4(s.data, i+2)
					}
					if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				s.scratch = utf8.AppendRune(s.scratch, r)
			default:
				s.pos = i - 1
				s.syntax("invalid escape in string")
				return nil, false
			}
		case c < utf8.RuneSelf:
			s.scratch = append(s.scratch, c)
			i++
		default:
			r, n := utf8.DecodeRune(s.data[i:])
			s.scratch = utf8.AppendRune(s.scratch, r)
			i += n
		}
	}
	s.pos = len(s.data)
	s.syntax("unterminated string")
	return nil, false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// numberToken consumes a number by the JSON grammar and returns its bytes.
func (s *scanner) numberToken() ([]byte, bool) {
	s.skipSpace()
	d := s.data
	start, i := s.pos, s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		s.pos = i
		s.syntax("invalid number")
		return nil, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			s.syntax("invalid number: want a digit after the decimal point")
			return nil, false
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			s.syntax("invalid number: want a digit in the exponent")
			return nil, false
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	s.pos = i
	return d[start:i], true
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseNumber converts a number token (already checked by numberToken) to
// a float64, correctly rounded. Plain integers of at most 2^53 and decimals
// with few digits take an exact fast path that allocates nothing; the rest
// go through strconv.ParseFloat. exact is the integer value when the token
// is a plain non-negative integer below 2^63 (isInt), for exact 2^53 checks.
func parseNumber(tok []byte) (f float64, exact uint64, isInt bool) {
	neg := tok[0] == '-'
	i := 0
	if neg {
		i++
	}
	var mant uint64
	digits, exp10 := 0, 0
	overflow := false
	for ; i < len(tok) && tok[i] >= '0' && tok[i] <= '9'; i++ {
		if mant > (math.MaxUint64-9)/10 {
			overflow = true
			continue
		}
		mant = mant*10 + uint64(tok[i]-'0')
		if mant != 0 {
			digits++
		}
	}
	if i == len(tok) && !neg && !overflow && mant < 1<<63 {
		exact, isInt = mant, true
	}
	if i < len(tok) && tok[i] == '.' {
		i++
		for ; i < len(tok) && tok[i] >= '0' && tok[i] <= '9'; i++ {
			if mant > (math.MaxUint64-9)/10 {
				overflow = true
				continue
			}
			mant = mant*10 + uint64(tok[i]-'0')
			exp10--
		}
	}
	if i == len(tok) && !overflow && mant <= 1<<53 && exp10 >= -22 {
		f = float64(mant)
		if exp10 < 0 {
			f /= pow10[-exp10]
		}
		if neg {
			f = -f
		}
		return f, exact, isInt
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		// Out of range: ±Inf, which callers reject as not finite.
		return f, exact, isInt
	}
	return f, exact, isInt
}

// number consumes a number; a non-number is a wrong_type error at path.
func (s *scanner) number(path lazyPath) (f float64, exact uint64, isInt, ok bool) {
	if s.next() != kindNumber {
		s.wrongType(path, "a number")
		return 0, 0, false, false
	}
	tok, ok := s.numberToken()
	if !ok {
		return 0, 0, false, false
	}
	f, exact, isInt = parseNumber(tok)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		s.fail(jsonpath.NewError(CodeInvalidValue, path.String(), "cannot use "+string(tok)+": want a finite number"))
		return 0, 0, false, false
	}
	return f, exact, isInt, true
}

// amount consumes one resource amount (api.md §1), as jsonpath.Amount does for
// decoded values: non-negative, cpu rounded to centi-cores, the others whole
// numbers, all at most 2^53.
func (s *scanner) amount(path lazyPath, k resource.Kind) (int64, bool) {
	s.skipSpace()
	start := s.pos
	f, exact, isInt, ok := s.number(path)
	if !ok {
		return 0, false
	}
	tok := s.data[start:s.pos]
	bad := func(want string) (int64, bool) {
		s.fail(jsonpath.NewError(CodeInvalidValue, path.String(), "cannot use "+string(tok)+": want "+want))
		return 0, false
	}
	switch {
	case f < 0:
		return bad("a non-negative number")
	case k == resource.CPU:
		if f*resource.CPUScale > resource.MaxAmount {
			return bad("at most 2^53 centi-cores (90071992547409.92 cpu)")
		}
		return resource.Cores(f), true
	case isInt && exact > resource.MaxAmount || f > resource.MaxAmount:
		return bad("at most 2^53 (9007199254740992)")
	case f != math.Trunc(f):
		return bad("a whole number")
	case isInt:
		return int64(exact), true
	}
	return int64(f), true
}

// resources consumes a resource object into v (missing resources are 0).
func (s *scanner) resources(path lazyPath, v *resource.Vec) bool {
	if !s.objectStart(path) {
		return false
	}
	var seen uint8
	for first := true; s.more('}', first); first = false {
		k, ok := s.key()
		if !ok {
			return false
		}
		kind, known := kindOf(k)
		if known && !s.once(&seen, k, kindNames[:], path) {
			return false
		}
		if !known {
			s.fail(jsonpath.UnknownResource(path.String(), string(k)))
			return false
		}
		x, ok := s.amount(path.member(kindNames[kind]), kind)
		if !ok {
			return false
		}
		v[kind] = x
	}
	return s.err == nil
}

var kindNames = resource.Names()

// once records key k of an object whose known keys are names (at most 8)
// in *seen, and records an error if the object had it already: a
// duplicate key is ambiguous (encoding/json takes the last, others the
// first), so the heartbeat refuses it, as encoding/json/v2 does. Unknown
// keys pass; the caller reports them.
func (s *scanner) once(seen *uint8, k []byte, names []string, path lazyPath) bool {
	for i, n := range names {
		if string(k) == n {
			if *seen&(1<<i) != 0 {
				s.fail(jsonpath.NewError(CodeDuplicateKey, jsonpath.Key(path.String(), n), "cannot use key "+jsonpath.Describe(n)+" twice in one object"))
				return false
			}
			*seen |= 1 << i
			return true
		}
	}
	return true
}

// kindOf returns the resource named b, without allocating.
func kindOf(b []byte) (resource.Kind, bool) {
	for k, n := range kindNames {
		if string(b) == n {
			return resource.Kind(k), true
		}
	}
	return 0, false
}

// lazyPath is a JSON path that is formatted only when an error needs it:
// base, then [idx] when idx ≥ 0, then .field and .leaf when not empty.
type lazyPath struct {
	base  string
	idx   int
	field string
	leaf  string
}

func rootPath(base string) lazyPath { return lazyPath{base: base, idx: -1} }

// index returns the path of element i of the array at p (p has no index).
func (p lazyPath) index(i int) lazyPath { p.idx = i; return p }

// member returns the path of member name of the object at p.
func (p lazyPath) member(name string) lazyPath {
	if p.field == "" {
		p.field = name
	} else {
		p.leaf = name
	}
	return p
}

func (p lazyPath) String() string {
	out := p.base
	if p.idx >= 0 {
		out = jsonpath.Index(out, p.idx)
	}
	if p.field != "" {
		out = jsonpath.Key(out, p.field)
	}
	if p.leaf != "" {
		out = jsonpath.Key(out, p.leaf)
	}
	return out
}

// objectStart consumes '{' or records a wrong_type error.
func (s *scanner) objectStart(path lazyPath) bool { return s.open(kindObject, path, "an object") }

// arrayStart consumes '[' or records a wrong_type error.
func (s *scanner) arrayStart(path lazyPath, want string) bool { return s.open(kindArray, path, want) }

// open consumes the bracket of a value of kind k, one level deeper, or
// records a wrong_type error (want) or a too-deep syntax error.
func (s *scanner) open(k kind, path lazyPath, want string) bool {
	if s.next() != k {
		s.wrongType(path, want)
		return false
	}
	s.depth++
	if s.depth > maxDepth {
		s.syntax("exceeded max depth")
		return false
	}
	s.pos++
	return true
}

// more reports whether another member or element follows in the object or
// array whose start or previous member was just consumed: it consumes the
// ',' before it, or the closing bracket and returns false. first is true
// right after the opening bracket.
func (s *scanner) more(closing byte, first bool) bool {
	c := s.peek()
	if c == closing {
		s.pos++
		s.depth--
		return false
	}
	if !first {
		if c != ',' {
			if closing == '}' {
				s.syntax("want ',' or '}' after object member")
			} else {
				s.syntax("want ',' or ']' after array element")
			}
			return false
		}
		s.pos++
		return true
	}
	return true
}

// key consumes a member name and the ':' after it.
func (s *scanner) key() ([]byte, bool) {
	if s.peek() != '"' {
		s.syntax("want a string for an object key")
		return nil, false
	}
	k, ok := s.str()
	if !ok {
		return nil, false
	}
	return k, s.consume(':', "want ':' after object key")
}

// end checks that only spaces follow the value.
func (s *scanner) end() bool {
	if s.err != nil {
		return false
	}
	if s.peek() != 0 || s.pos < len(s.data) {
		s.syntax("want one value, found more after it")
		return false
	}
	return true
}
