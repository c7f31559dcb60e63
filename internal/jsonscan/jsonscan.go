// Package jsonscan is a strict, allocation-free JSON tokenizer for the
// hand-written decoders of fairsched's hot paths: wire's heartbeat
// decoder (the server's side) and loadgen's reader of heartbeat answers.
// It reads tokens; the decoders match keys, convert values and word their
// own errors (codes, JSON paths).
//
// A decoder walks the document value by value:
//
//	s.Reset(data)
//	if !s.OpenObject() {
//		// not an object (or a syntax error: see Failed)
//	}
//	for first := true; s.More('}', first); first = false {
//		k, ok := s.Key()
//		if !ok {
//			break
//		}
//		switch string(k) {
//		case "id":
//			v, ok := s.Str()
//			…
//		default:
//			s.Skip()
//		}
//	}
//	if !s.End() {
//		// s.Err(), or the decoder's own error
//	}
//
// # Validation
//
// What the Scanner reads, it checks by RFC 8259: strings (no control
// characters, only the grammar's escapes, \u with four hex digits), numbers
// (no leading zero, no '+', a digit after '.' and in the exponent), the
// literals true, false and null, the ',' and ':' between members and
// elements, and nothing but spaces after the value (End). A decoder that
// reads or skips every value and calls End therefore accepts exactly what
// encoding/json.Valid accepts, less documents nested deeper than MaxDepth
// (FuzzScanner checks it). Invalid UTF-8 in a string is valid, as for
// encoding/json; Str replaces it, and the lone surrogates of \u escapes, by
// U+FFFD, as encoding/json does.
//
// A read of one kind of value (OpenObject, OpenArray, Str, RawStr, Number)
// that finds another kind, or no value at all, returns false and records
// nothing, leaving the Scanner before that value: a wrong type is the
// decoder's error to word (Failed tells it from a syntax error), or it reads
// the value some other way. Key, More, Skip and End record a syntax error for
// anything that is not JSON.
//
// # Errors
//
// The first error stops the Scanner: Err keeps it and nothing recorded later
// replaces it. Reads that go on after it may consume more input; decoders
// check the ok results (or Failed) and return. A *SyntaxError gives the
// byte offset of the offending byte (the input's length when it ends too
// early, with the message "unexpected end of input"); the offset is never
// after the byte at which encoding/json reports the document invalid. A
// decoder that finds an error of its own (a wrong type, a value out of
// range) keeps it and calls Stop, so that whichever side finds the first
// error, it is the one reported.
//
// # Allocation
//
// None on valid input, but for Str and Key of a string with escapes or
// invalid UTF-8, which unescape into the Scanner's scratch buffer: it is
// kept across Reset, so a reused Scanner stops allocating once it has seen
// its longest such string. RawStr, RawKey, Skip, Number and the structural
// reads never allocate; ParseNumber allocates nothing for numbers of up to
// 32 bytes. A syntax error allocates its *SyntaxError (and the message
// that names an invalid character).
//
// # Ownership
//
// The Scanner keeps data until the next Reset (Reset(nil) drops it) and
// never modifies it. Byte slices it returns alias data (Number, RawStr,
// RawKey, Rest, and Str and Key for a string without escapes and with valid
// UTF-8) or the scratch buffer (Str and Key otherwise), which the next Str
// or Key overwrites: a caller copies what it keeps. A Scanner is not safe
// for concurrent use; its zero value is ready for Reset.
//
// NB: the package imports only the standard library (internal/lint), so
// that wire and loadgen can share it without sharing anything else.
package jsonscan

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of objects and arrays, for bodies that are
// mostly brackets: opening one more is a syntax error.
const MaxDepth = 64

// Kind is the kind of value that a byte starts (Next).
type Kind uint8

// The kinds of values. Invalid is a byte that starts no value, or the end
// of the input.
const (
	Invalid Kind = iota
	Object
	Array
	String
	Number
	True
	False
	Null
)

// SyntaxError is where and why the input stopped being JSON.
type SyntaxError struct {
	// Offset is the offset of the offending byte in the input; its length
	// when the input ended too early.
	Offset int
	// Msg says what is wrong: "want ':' after object key", or "unexpected
	// end of input" at the end.
	Msg string
}

// Error returns "jsonscan: cannot parse JSON at byte <Offset>: <Msg>".
func (e *SyntaxError) Error() string {
	return "jsonscan: cannot parse JSON at byte " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Scanner reads one JSON document token by token; see the package
// documentation for its contract.
type Scanner struct {
	data    []byte
	pos     int
	depth   int
	err     *SyntaxError // the first error; stopped when the decoder's own
	scratch []byte       // Str's unescaped strings
}

// stopped marks a Scanner that Stop stopped; it is never returned.
var stopped = &SyntaxError{Offset: -1, Msg: "stopped by the decoder"}

// Reset prepares s to read data from its start, keeping the scratch buffer.
func (s *Scanner) Reset(data []byte) {
	s.data, s.pos, s.depth, s.err = data, 0, 0, nil
	s.scratch = s.scratch[:0]
}

// Input returns the data of the last Reset.
func (s *Scanner) Input() []byte { return s.data }

// Pos returns the offset of the next byte to read.
func (s *Scanner) Pos() int { return s.pos }

// Rest returns the input not read yet, for decoders' fast paths that match
// bytes themselves (then Advance).
func (s *Scanner) Rest() []byte { return s.data[s.pos:] }

// Advance consumes the first n bytes of Rest, which the caller has checked
// to be whole JSON tokens that fit where the Scanner stands (for example a
// whole member value), n ≤ len(Rest()).
func (s *Scanner) Advance(n int) { s.pos += n }

// Mark is a position of a Scanner to read again from (Restore).
type Mark struct{ pos, depth int }

// Mark returns the current position, for Restore.
func (s *Scanner) Mark() Mark { return Mark{pos: s.pos, depth: s.depth} }

// Restore moves s back to m, a Mark of the same input, and undoes a Stop,
// so that a decoder that found an error of its own in a value can read the
// value again from its start, say to skip it and go on with the next. It
// reports false, and changes nothing, when s stopped for a syntax error:
// input that is not JSON stays refused.
func (s *Scanner) Restore(m Mark) bool {
	if s.err != nil && s.err != stopped {
		return false
	}
	s.pos, s.depth, s.err = m.pos, m.depth, nil
	return true
}

// Failed reports whether s has stopped: a syntax error, or Stop.
func (s *Scanner) Failed() bool { return s.err != nil }

// Err returns the syntax error that stopped s, or nil: nil too when the
// decoder stopped it (Stop).
func (s *Scanner) Err() *SyntaxError {
	if s.err == stopped {
		return nil
	}
	return s.err
}

// Stop stops s for an error that the decoder found and keeps itself, unless
// s has stopped already; Err stays nil.
func (s *Scanner) Stop() {
	if s.err == nil {
		s.err = stopped
	}
}

// syntax records a syntax error at the current position.
//
// NB: out of line, so that the error path does not grow the hot reads it
// is called from (it would inline: it only allocates).
//
//go:noinline
func (s *Scanner) syntax(msg string) {
	if s.err != nil {
		return
	}
	if s.pos >= len(s.data) {
		s.err = &SyntaxError{Offset: len(s.data), Msg: "unexpected end of input"}
		return
	}
	s.err = &SyntaxError{Offset: s.pos, Msg: msg}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *Scanner) skipSpace() {
	for s.pos < len(s.data) && isSpace(s.data[s.pos]) {
		s.pos++
	}
}

// Peek consumes spaces and returns the next byte, or 0 at the end (a 0
// byte of the input is also returned as 0: Rest tells them apart).
func (s *Scanner) Peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// Next consumes spaces and returns the kind of the value that the next
// byte starts, without checking that value.
func (s *Scanner) Next() Kind { return kinds[s.Peek()] }

// kinds is the kind of value that each byte starts (a table, so that Next
// inlines).
var kinds = [256]Kind{
	'{': Object, '[': Array, '"': String, 't': True, 'f': False, 'n': Null, '-': Number,
	'0': Number, '1': Number, '2': Number, '3': Number, '4': Number,
	'5': Number, '6': Number, '7': Number, '8': Number, '9': Number,
}

// OpenObject consumes the '{' of an object, one level deeper. It returns
// false, recording nothing, when the next value is not an object, and
// false with a syntax error when the nesting would exceed MaxDepth.
func (s *Scanner) OpenObject() bool { return s.open('{') }

// OpenArray consumes the '[' of an array, as OpenObject does for objects.
func (s *Scanner) OpenArray() bool { return s.open('[') }

func (s *Scanner) open(c byte) bool {
	if s.Peek() != c {
		return false
	}
	s.depth++
	if s.depth > MaxDepth {
		s.syntax("exceeded max depth")
		return false
	}
	s.pos++
	return true
}

// More reports whether another member or element follows in the object or
// array (closing is '}' or ']') whose opening bracket or previous value was
// just read; first is true right after the opening bracket. It consumes
// the ',' before the next one, or the closing bracket (one level up) and
// returns false; it returns false with a syntax error for anything else.
func (s *Scanner) More(closing byte, first bool) bool {
	c := s.Peek()
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

// Key reads a member name, as Str does, and the ':' after it. Anything
// else is a syntax error.
func (s *Scanner) Key() ([]byte, bool) {
	if s.Peek() != '"' {
		s.syntax("want a string for an object key")
		return nil, false
	}
	k, ok := s.str()
	if !ok {
		return nil, false
	}
	// NB: the ':' right after the name, as encoders write it, without the
	// call (measured: a tenth of loadgen's DecodeResponse of an empty
	// answer, which reads three names).
	if s.pos < len(s.data) && s.data[s.pos] == ':' {
		s.pos++
		return k, true
	}
	return k, s.colon()
}

// RawKey reads a member name, as RawStr does, and the ':' after it. A
// name with escapes comes back with them, so it equals no plain name.
func (s *Scanner) RawKey() (raw []byte, escaped, ok bool) {
	if s.Peek() != '"' {
		s.syntax("want a string for an object key")
		return nil, false, false
	}
	if raw, escaped, ok = s.rawStr(); !ok {
		return nil, false, false
	}
	if s.pos < len(s.data) && s.data[s.pos] == ':' { // NB: as in Key
		s.pos++
		return raw, escaped, true
	}
	return raw, escaped, s.colon()
}

// colon consumes spaces and the ':' after a member name.
func (s *Scanner) colon() bool {
	if s.Peek() != ':' {
		s.syntax("want ':' after object key")
		return false
	}
	s.pos++
	return true
}

// Str reads a string and returns its unescaped bytes: a slice of the input
// when it has no escape and valid UTF-8, else of the scratch buffer (valid
// until the next Str or Key). Invalid UTF-8 and lone surrogates become
// U+FFFD, as in encoding/json.
func (s *Scanner) Str() ([]byte, bool) {
	if s.Peek() != '"' {
		return nil, false
	}
	return s.str()
}

// str reads the string whose opening quote is at s.pos.
func (s *Scanner) str() ([]byte, bool) {
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
				return s.replaceInvalid(b), true
			}
			return b, true
		case c == '\\':
			if !s.escaped(start, true) {
				return nil, false
			}
			return s.scratch, true
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

// RawStr reads a string, checking its escapes, and returns its bytes
// between the quotes as they are in the input, and whether they hold an
// escape. It never allocates.
func (s *Scanner) RawStr() (raw []byte, escaped, ok bool) {
	if s.Peek() != '"' {
		return nil, false, false
	}
	return s.rawStr()
}

// rawStr reads the string whose opening quote is at s.pos.
func (s *Scanner) rawStr() (raw []byte, escaped, ok bool) {
	s.pos++
	start := s.pos
	for i := s.pos; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.pos = i + 1
			return s.data[start:i], false, true
		case c == '\\':
			if !s.escaped(i, false) {
				return nil, false, false
			}
			return s.data[start : s.pos-1], true, true
		case c < 0x20:
			s.pos = i
			s.syntax("invalid control character in string")
			return nil, false, false
		}
	}
	s.pos = len(s.data)
	s.syntax("unterminated string")
	return nil, false, false
}

// replaceInvalid copies b into scratch replacing invalid UTF-8 with U+FFFD.
func (s *Scanner) replaceInvalid(b []byte) []byte {
	s.scratch = s.scratch[:0]
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		s.scratch = utf8.AppendRune(s.scratch, r)
		b = b[n:]
	}
	return s.scratch
}

// escaped reads the rest of a string with escapes from i, up to and with
// its closing quote. With keep, i is the string's start (after the
// quote), and the unescaped string goes to scratch.
func (s *Scanner) escaped(i int, keep bool) bool {
	if keep {
		s.scratch = s.scratch[:0]
	}
	for i < len(s.data) {
		c := s.data[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return true
		case c < 0x20:
			s.pos = i
			s.syntax("invalid control character in string")
			return false
		case c == '\\':
			r, n := s.escape(i)
			if n == 0 {
				return false
			}
			if keep {
				s.scratch = utf8.AppendRune(s.scratch, r)
			}
			i += n
		case !keep:
			i++
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
	return false
}

// escape decodes the escape at s.data[i] (a backslash) into its rune and
// length; n = 0 with a syntax error if it is not one. A surrogate pair
// of \u escapes is one rune; a lone surrogate is U+FFFD.
func (s *Scanner) escape(i int) (r rune, n int) {
	d := s.data
	if i+1 >= len(d) {
		s.pos = len(d)
		s.syntax("unterminated string")
		return 0, 0
	}
	switch e := d[i+1]; e {
	case '"', '\\', '/':
		return rune(e), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, ok := hex4(d, i+2)
		if !ok {
			s.pos = i + 2
			s.syntax("invalid \\u escape in string")
			return 0, 0
		}
		if !utf16.IsSurrogate(r) {
			return r, 6
		}
		r2, ok2 := rune(-1), false
		if i+12 <= len(d) && d[i+6] == '\\' && d[i+7] == 'u' {
			r2, ok2 = hex4(d, i+8)
		}
		if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
			return dec, 12
		}
		// The second escape, if any, is read on its own.
		return utf8.RuneError, 6
	}
	s.pos = i + 1
	s.syntax("invalid escape in string")
	return 0, 0
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

// Skip reads one value of any kind, checking it as the other reads do
// (nested values count towards MaxDepth). A byte that starts no value is
// a syntax error.
func (s *Scanner) Skip() bool {
	switch c := s.Peek(); {
	case c == '"':
		_, _, ok := s.rawStr()
		return ok
	case c == '-' || c >= '0' && c <= '9':
		_, ok := s.Number()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '{' || c == '[':
		return s.skipNested(c)
	case s.err != nil:
		return false
	case s.pos < len(s.data):
		s.syntax("invalid character " + strconv.QuoteRune(rune(c)) + " looking for beginning of value")
	default:
		s.syntax("")
	}
	return false
}

// skipNested skips the object or array whose opening bracket is next.
func (s *Scanner) skipNested(open byte) bool {
	if !s.open(open) {
		return false
	}
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	for first := true; s.More(closing, first); first = false {
		if open == '{' {
			if _, _, ok := s.RawKey(); !ok {
				return false
			}
		}
		if !s.Skip() {
			return false
		}
	}
	return s.err == nil
}

// literal consumes lit (true, false or null) at the current position; a
// syntax error is at its first wrong byte.
func (s *Scanner) literal(lit string) bool {
	if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		return true
	}
	for i := 0; i < len(lit) && s.pos < len(s.data) && s.data[s.pos] == lit[i]; i++ {
		s.pos++
	}
	s.syntax("invalid literal")
	return false
}

// End checks that only spaces follow the value read and that s has not
// stopped.
func (s *Scanner) End() bool {
	if s.err != nil {
		return false
	}
	if s.Peek() != 0 || s.pos < len(s.data) {
		s.syntax("want one value, found more after it")
		return false
	}
	return true
}
