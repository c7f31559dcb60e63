// Package tagfilter parses and evaluates scheduling tag filters
// (docs/semantics.md): boolean formulas over node tags that pools and operations set
// as scheduling_tag_filter, such as
//
//	gpu & !preemptible
//	tag_2 | (tag_1 & tag_4)
//
// # Syntax
//
// A formula is tags combined with ! (not), & (and) and | (or), binding in
// that order, and parentheses; whitespace between tokens is ignored. A tag
// is written bare — a run of any characters other than whitespace and
// !&|()" — or quoted, "…", with \" and \\ for a quote and a backslash
// inside, so that every tag a node may report (docs/api.md#node-heartbeats: 1–256 bytes of
// anything) can be named. The empty formula (or only whitespace) is no
// filter: it matches every node.
//
// A parsed Filter is valid by construction, immutable and safe to share.
// String returns its canonical form, which parses back to the same filter:
// single spaces around & and |, a chain of the same operator flattened,
// parentheses around an & inside a | (for the reader) and wherever
// precedence needs them, tags bare where they can be.
//
// # Evaluation
//
// Filters are evaluated on the scheduling path, so they compile to a
// Program: postfix instructions over bit indices of a tag dictionary that
// the caller owns (core/schedule interns every tag any filter names). A node
// is then a bit set of its tags in that dictionary, and Program.Match is a
// loop over a few instructions with a 64-bit stack and no allocation.
//
// The package is a leaf of the core: it imports only the standard library.
package tagfilter

import (
	"strconv"
	"strings"
)

// Limits of a formula.
const (
	// MaxLength is the longest formula accepted, in bytes.
	MaxLength = 4096
	// MaxTagLength is the longest tag, in bytes: the heartbeat's limit.
	MaxTagLength = 256
	// MaxDepth bounds the nesting of parentheses and negations, so that
	// evaluation fits its 64-bit stack (and parsing its recursion).
	MaxDepth = 32
)

// opcode is an instruction of a postfix program.
type opcode uint8

const (
	opTag opcode = iota // push whether tag arg is set
	opNot               // negate the top
	opAnd               // pop two, push their conjunction
	opOr                // pop two, push their disjunction
)

type instr struct {
	op  opcode
	arg uint32 // opTag: the tag's index (in Filter.tags, or a dictionary bit in a Program)
}

// Filter is a parsed scheduling tag filter. The zero value is the empty
// filter, which matches everything.
type Filter struct {
	canon string
	tags  []string // distinct tags, in order of first appearance
	prog  []instr  // postfix over indices into tags
}

// SyntaxError is a formula that does not parse: Offset is the byte offset
// of the problem in Formula (len(Formula) for an unexpected end).
type SyntaxError struct {
	Formula string
	Offset  int
	Msg     string
}

func (e *SyntaxError) Error() string {
	return "cannot parse scheduling tag filter " + strconv.Quote(e.Formula) + " at offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// IsEmpty reports whether f is the empty filter (it matches every node).
func (f Filter) IsEmpty() bool { return len(f.prog) == 0 }

// String returns the canonical form ("" for the empty filter).
func (f Filter) String() string { return f.canon }

// Equal reports whether f and g are the same formula (in canonical form).
func (f Filter) Equal(g Filter) bool { return f.canon == g.canon }

// Tags returns the distinct tags the formula names, in order of first
// appearance. The slice is shared: callers must not modify it.
func (f Filter) Tags() []string { return f.tags }

// Match evaluates the filter on a node's tags, a linear search for each tag
// it names; for tests and tools. The scheduling path uses a Program.
func (f Filter) Match(tags []string) bool {
	bits := make([]uint64, (len(f.tags)+63)/64)
	for i, t := range f.tags {
		for _, nt := range tags {
			if nt == t {
				bits[i/64] |= 1 << (i % 64)
				break
			}
		}
	}
	return Program(f.prog).Match(bits)
}

// Program is a filter compiled against a tag dictionary: its tags are bit
// indices. A nil Program matches everything.
type Program []instr

// Compile returns the program of f with each tag t replaced by bit(t), the
// tag's index in the caller's dictionary. It allocates the program.
func (f Filter) Compile(bit func(tag string) uint32) Program {
	if f.IsEmpty() {
		return nil
	}
	p := make(Program, len(f.prog))
	for i, in := range f.prog {
		if in.op == opTag {
			in.arg = bit(f.tags[in.arg])
		}
		p[i] = in
	}
	return p
}

// Match evaluates the program on a node whose tags are the set bits of
// bits (bit b is bits[b/64]>>(b%64)&1; bits past the end are unset). It
// does not allocate.
func (p Program) Match(bits []uint64) bool {
	if len(p) == 0 {
		return true
	}
	var st uint64 // the stack: bit i is entry i
	sp := uint(0)
	for _, in := range p {
		switch in.op {
		case opTag:
			w := in.arg >> 6
			v := uint64(0)
			if int(w) < len(bits) {
				v = bits[w] >> (in.arg & 63) & 1
			}
			st = st&^(1<<sp) | v<<sp
			sp++
		case opNot:
			st ^= 1 << (sp - 1)
		case opAnd:
			sp--
			if st>>sp&1 == 0 {
				st &^= 1 << (sp - 1)
			}
		case opOr:
			sp--
			st |= (st >> sp & 1) << (sp - 1)
		}
	}
	return st&1 != 0
}

// ---- parsing ----

// node is the parse tree, kept only while parsing and printing.
type node struct {
	op   opcode // opTag, opNot, opAnd, opOr
	tag  string
	kids []*node
}

type parser struct {
	s     string
	pos   int
	depth int
	err   *SyntaxError
}

// Parse parses a formula. It returns the empty filter for "" (or only
// whitespace) and a *SyntaxError for a malformed formula.
func Parse(s string) (Filter, error) {
	if len(s) > MaxLength {
		return Filter{}, &SyntaxError{Formula: s[:64] + "…", Offset: MaxLength, Msg: "formula longer than " + strconv.Itoa(MaxLength) + " bytes"}
	}
	p := &parser{s: s}
	p.space()
	if p.pos == len(s) {
		return Filter{}, nil
	}
	n := p.or()
	if p.err == nil && p.pos < len(s) {
		p.unexpected("\"&\", \"|\" or the end")
	}
	if p.err != nil {
		return Filter{}, p.err
	}
	f := Filter{canon: format(n, false)}
	index := map[string]uint32{}
	f.prog = compile(n, f.prog, func(t string) uint32 {
		i, ok := index[t]
		if !ok {
			i = uint32(len(f.tags))
			index[t] = i
			f.tags = append(f.tags, t)
		}
		return i
	})
	return f, nil
}

// MustParse is Parse for formulas known to be valid (tests, constants); it
// panics on a syntax error.
func MustParse(s string) Filter {
	f, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return f
}

func (p *parser) fail(off int, msg string) {
	if p.err == nil {
		p.err = &SyntaxError{Formula: p.s, Offset: off, Msg: msg}
	}
}

// unexpected reports the token at the current position.
func (p *parser) unexpected(want string) {
	if p.pos >= len(p.s) {
		p.fail(p.pos, "unexpected end of formula: want "+want)
		return
	}
	c := p.s[p.pos]
	tok := strconv.QuoteRune(rune(c))
	if c >= 0x80 || c < 0x20 {
		tok = "byte " + strconv.QuoteToASCII(p.s[p.pos:p.pos+1])
	}
	p.fail(p.pos, "unexpected "+tok+": want "+want)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isBare reports whether c may appear in a bare tag.
func isBare(c byte) bool {
	switch c {
	case '!', '&', '|', '(', ')', '"':
		return false
	}
	return !isSpace(c)
}

func (p *parser) space() {
	for p.pos < len(p.s) && isSpace(p.s[p.pos]) {
		p.pos++
	}
}

// or := and ("|" and)*
func (p *parser) or() *node {
	n := p.and()
	for p.err == nil && p.pos < len(p.s) && p.s[p.pos] == '|' {
		p.pos++
		p.space()
		m := p.and()
		n = join(opOr, n, m)
	}
	return n
}

// and := not ("&" not)*
func (p *parser) and() *node {
	n := p.not()
	for p.err == nil && p.pos < len(p.s) && p.s[p.pos] == '&' {
		p.pos++
		p.space()
		m := p.not()
		n = join(opAnd, n, m)
	}
	return n
}

// join combines a and b under op, flattening chains of op.
func join(op opcode, a, b *node) *node {
	if a == nil || b == nil {
		return nil
	}
	var kids []*node
	for _, x := range [2]*node{a, b} {
		if x.op == op {
			kids = append(kids, x.kids...)
		} else {
			kids = append(kids, x)
		}
	}
	return &node{op: op, kids: kids}
}

// not := "!" not | "(" or ")" | tag; followed by whitespace.
func (p *parser) not() *node {
	if p.err != nil {
		return nil
	}
	if p.pos >= len(p.s) {
		p.unexpected("a tag, \"!\" or \"(\"")
		return nil
	}
	switch c := p.s[p.pos]; {
	case c == '!' || c == '(':
		if p.depth++; p.depth > MaxDepth {
			p.fail(p.pos, "formula nested deeper than "+strconv.Itoa(MaxDepth)+" levels of \"!\" and \"(\"")
			return nil
		}
		start := p.pos
		p.pos++
		p.space()
		var n *node
		if c == '!' {
			if k := p.not(); k != nil {
				n = &node{op: opNot, kids: []*node{k}}
			}
		} else {
			n = p.or()
			if p.err == nil {
				if p.pos >= len(p.s) {
					p.fail(p.pos, "unexpected end of formula: want \")\" to close the \"(\" at offset "+strconv.Itoa(start))
				} else if p.s[p.pos] != ')' {
					p.unexpected("\"&\", \"|\" or \")\"")
				}
			}
			if p.err != nil {
				return nil
			}
			p.pos++
			p.space()
		}
		p.depth--
		return n
	case c == '"':
		return p.quoted()
	case isBare(c):
		start := p.pos
		for p.pos < len(p.s) && isBare(p.s[p.pos]) {
			p.pos++
		}
		if p.pos-start > MaxTagLength {
			p.fail(start, "tag longer than "+strconv.Itoa(MaxTagLength)+" bytes")
			return nil
		}
		n := &node{op: opTag, tag: p.s[start:p.pos]}
		p.space()
		return n
	}
	p.unexpected("a tag, \"!\" or \"(\"")
	return nil
}

// quoted reads a "…" tag with \" and \\ escapes.
func (p *parser) quoted() *node {
	start := p.pos
	p.pos++
	var b strings.Builder
	for {
		if p.pos >= len(p.s) {
			p.fail(start, "unterminated quoted tag")
			return nil
		}
		c := p.s[p.pos]
		if c == '"' {
			p.pos++
			break
		}
		if c == '\\' {
			if p.pos+1 >= len(p.s) || (p.s[p.pos+1] != '"' && p.s[p.pos+1] != '\\') {
				p.fail(p.pos, "bad escape in quoted tag: want \\\" or \\\\")
				return nil
			}
			p.pos++
			c = p.s[p.pos]
		}
		b.WriteByte(c)
		p.pos++
	}
	t := b.String()
	switch {
	case t == "":
		p.fail(start, "empty tag")
		return nil
	case len(t) > MaxTagLength:
		p.fail(start, "tag longer than "+strconv.Itoa(MaxTagLength)+" bytes")
		return nil
	}
	p.space()
	return &node{op: opTag, tag: t}
}

// compile appends n's postfix program to dst; bit numbers its tags.
func compile(n *node, dst []instr, bit func(string) uint32) []instr {
	switch n.op {
	case opTag:
		return append(dst, instr{op: opTag, arg: bit(n.tag)})
	case opNot:
		dst = compile(n.kids[0], dst, bit)
		return append(dst, instr{op: opNot})
	}
	for i, k := range n.kids {
		dst = compile(k, dst, bit)
		if i > 0 {
			dst = append(dst, instr{op: n.op})
		}
	}
	return dst
}

// format writes n in canonical form; paren wraps a binary operator.
func format(n *node, paren bool) string {
	switch n.op {
	case opTag:
		return quoteTag(n.tag)
	case opNot:
		return "!" + format(n.kids[0], true)
	}
	sep := " & "
	if n.op == opOr {
		sep = " | "
	}
	var b strings.Builder
	if paren {
		b.WriteByte('(')
	}
	for i, k := range n.kids {
		if i > 0 {
			b.WriteString(sep)
		}
		// An & inside a | is parenthesised for the reader; a | inside an &
		// must be.
		b.WriteString(format(k, k.op == opAnd || k.op == opOr))
	}
	if paren {
		b.WriteByte(')')
	}
	return b.String()
}

// quoteTag writes a tag bare when it can be, else quoted.
func quoteTag(t string) string {
	bare := true
	for i := 0; i < len(t); i++ {
		if !isBare(t[i]) {
			bare = false
			break
		}
	}
	if bare {
		return t
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(t); i++ {
		if c := t[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(t[i])
	}
	b.WriteByte('"')
	return b.String()
}
