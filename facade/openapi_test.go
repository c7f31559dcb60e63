package facade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/docs"
	"github.com/fairsched/fairsched/examples"
	"github.com/fairsched/fairsched/wire"
)

// The OpenAPI document (docs/openapi.json, served at GET
// /api/v1/openapi.json) and the server are kept in agreement by the tests
// of this file:
//
//   - TestOpenAPIDocument: the document is well-formed OpenAPI 3.1 — its
//     structure, every $ref resolves, every path parameter is declared,
//     every schema compiles as JSON Schema 2020-12;
//   - TestOpenAPIRoutes: every route the router has is documented with its
//     methods, and every documented path and method is routed and answers a
//     documented status with a body its schema accepts;
//   - TestOpenAPIRequestBodies: every request schema accepts its example and
//     agrees with the server on every variation of it — a key removed (the
//     required ones), a value of the wrong type, an unknown key;
//   - TestOpenAPIConfigSchemas (openapi_config_test.go): the tree config's
//     schemas are the settings tables';
//   - TestAPIDocExamples (apidoc_test.go): the examples of docs/api.md answer
//     documented statuses with bodies their schemas accept.
//
// They use github.com/santhosh-tekuri/jsonschema/v6, a test-only dependency.

const openAPIFile = "../docs/openapi.json"

// docOperation is one operation of the document: a path template and a
// method.
type docOperation struct {
	path   string // "/api/v1/pools/{name}"
	method string // "GET"
	ptr    string // JSON pointer of the operation object
	op     map[string]any
}

// openAPIDoc is the decoded document.
type openAPIDoc struct {
	root map[string]any
	ops  []docOperation
	// paths are the path templates split into segments, in document order.
	paths [][]string

	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

// openAPIMethods are the operation keys of a path item.
var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// loadOpenAPI reads docs/openapi.json, checks that the binary embeds the
// same bytes, and decodes it.
func loadOpenAPI(t *testing.T) *openAPIDoc {
	t.Helper()
	raw, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, docs.OpenAPI) {
		t.Fatalf("%s differs from the document embedded in package docs", openAPIFile)
	}
	d := &openAPIDoc{compiled: map[string]*jsonschema.Schema{}}
	if err := json.Unmarshal(raw, &d.root); err != nil {
		t.Fatalf("%s: %v", openAPIFile, err)
	}
	paths, _ := d.root["paths"].(map[string]any)
	for _, p := range orderedKeys(t, raw, "paths") {
		item, _ := paths[p].(map[string]any)
		d.paths = append(d.paths, strings.Split(strings.TrimPrefix(p, "/"), "/"))
		for _, m := range openAPIMethods {
			if op, ok := item[m].(map[string]any); ok {
				d.ops = append(d.ops, docOperation{path: p, method: strings.ToUpper(m), op: op,
					ptr: "#/paths/" + pointerToken(p) + "/" + m})
			}
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	d.compiler = jsonschema.NewCompiler()
	d.compiler.DefaultDraft(jsonschema.Draft2020)
	if err := d.compiler.AddResource("file:///openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	return d
}

// orderedKeys returns the keys of the top-level object member, in the
// order the document writes them (encoding/json's maps forget it).
func orderedKeys(t *testing.T, raw []byte, member string) []string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(top[member]))
	var keys []string
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '{' || tok == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if depth == 1 {
				keys = append(keys, tok)
				// Skip the value.
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return keys
}

// pointerToken escapes a JSON pointer token (RFC 6901) for use in a URI
// fragment.
func pointerToken(s string) string {
	s = strings.ReplaceAll(s, "~", "~0")
	s = strings.ReplaceAll(s, "/", "~1")
	s = strings.ReplaceAll(s, "{", "%7B")
	return strings.ReplaceAll(s, "}", "%7D")
}

func (d *openAPIDoc) schemas() map[string]any {
	c, _ := d.root["components"].(map[string]any)
	s, _ := c["schemas"].(map[string]any)
	return s
}

// resolve returns the value at a "#/…" reference.
func (d *openAPIDoc) resolve(ref string) (any, bool) {
	p, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	var v any = d.root
	if p == "" {
		return v, true
	}
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		tok = strings.NewReplacer("%7B", "{", "%7D", "}").Replace(tok)
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// deref follows $ref until an object without one, returning it and its
// pointer.
func (d *openAPIDoc) deref(ptr string, v any) (string, map[string]any) {
	for range 16 {
		m, _ := v.(map[string]any)
		ref, ok := m["$ref"].(string)
		if !ok {
			return ptr, m
		}
		ptr = ref
		v, _ = d.resolve(ref)
	}
	return ptr, nil
}

// schema compiles the schema at a pointer of the document.
func (d *openAPIDoc) schema(t *testing.T, ptr string) *jsonschema.Schema {
	t.Helper()
	if s := d.compiled[ptr]; s != nil {
		return s
	}
	s, err := d.compiler.Compile("file:///openapi.json" + ptr)
	if err != nil {
		t.Fatalf("cannot compile the schema at %s: %v", ptr, err)
	}
	d.compiled[ptr] = s
	return s
}

// match returns the path template that a request path instantiates: a
// template segment {x} matches any non-empty segment. A path that ends in
// '/' matches what it matches without it (the router takes "pools/" as
// "pools").
func (d *openAPIDoc) match(path string) (string, bool) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	try := [][]string{segs}
	if len(segs) > 1 && segs[len(segs)-1] == "" {
		try = append(try, segs[:len(segs)-1])
	}
	for _, segs := range try {
		for _, tmpl := range d.paths {
			if matchSegments(tmpl, segs) {
				return "/" + strings.Join(tmpl, "/"), true
			}
		}
	}
	return "", false
}

func matchSegments(tmpl, segs []string) bool {
	if len(tmpl) != len(segs) {
		return false
	}
	for i, t := range tmpl {
		if strings.HasPrefix(t, "{") {
			if segs[i] == "" {
				return false
			}
		} else if t != segs[i] {
			return false
		}
	}
	return true
}

// methods returns the documented methods of a path template, sorted.
func (d *openAPIDoc) methods(path string) []string {
	var ms []string
	for _, o := range d.ops {
		if o.path == path {
			ms = append(ms, o.method)
		}
	}
	slices.Sort(ms)
	return ms
}

func (d *openAPIDoc) operation(path, method string) *docOperation {
	for i := range d.ops {
		if d.ops[i].path == path && d.ops[i].method == method {
			return &d.ops[i]
		}
	}
	return nil
}

// statuses returns the explicitly documented statuses of an operation.
func (o *docOperation) statuses() []int {
	rs, _ := o.op["responses"].(map[string]any)
	var out []int
	for k := range rs {
		if n, err := strconv.Atoi(k); err == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// responseSchema returns the pointer of the schema of the operation's
// answer with status and media type, or "" when the document gives none.
func (d *openAPIDoc) responseSchema(o *docOperation, status int, media string) string {
	ptr := o.ptr + "/responses/" + strconv.Itoa(status)
	v, ok := d.resolve(ptr)
	if !ok {
		ptr = o.ptr + "/responses/default"
		if v, ok = d.resolve(ptr); !ok {
			return ""
		}
	}
	ptr, r := d.deref(ptr, v)
	content, _ := r["content"].(map[string]any)
	if _, ok := content[media]; !ok {
		return ""
	}
	return ptr + "/content/" + pointerToken(media) + "/schema"
}

// requestSchema returns the pointer of an operation's JSON request schema
// and its example, or "" when it takes no body.
func (d *openAPIDoc) requestSchema(o *docOperation) (string, any) {
	rb, ok := o.op["requestBody"]
	if !ok {
		return "", nil
	}
	ptr, r := d.deref(o.ptr+"/requestBody", rb)
	content, _ := r["content"].(map[string]any)
	mt, _ := content["application/json"].(map[string]any)
	return ptr + "/content/application~1json/schema", mt["example"]
}

// validate checks a JSON body against the schema at ptr.
func (d *openAPIDoc) validate(t *testing.T, ptr string, body []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return d.schema(t, ptr).Validate(v)
}

// checkAnswer checks that an answer of the server to method and path is
// documented: the path and method, the status (explicitly, or 413, 429,
// 431 and 500 under "default"), and for JSON answers the body's schema.
func (d *openAPIDoc) checkAnswer(t *testing.T, method, path string, status int, ctype string, body []byte) error {
	t.Helper()
	tmpl, ok := d.match(path)
	if !ok {
		return fmt.Errorf("%s %s: the path is not documented", method, path)
	}
	if method == "HEAD" {
		method = "GET"
	}
	o := d.operation(tmpl, method)
	if o == nil {
		return fmt.Errorf("%s %s: %s is not documented for %s", method, path, method, tmpl)
	}
	if !slices.Contains(o.statuses(), status) && !slices.Contains([]int{413, 429, 431, 500}, status) {
		return fmt.Errorf("%s %s: status %d is not documented for %s %s (%v): %.300s", method, path, status, method, tmpl, o.statuses(), body)
	}
	media, _, _ := strings.Cut(ctype, ";")
	ptr := d.responseSchema(o, status, media)
	if media == "application/json" {
		if ptr == "" {
			return fmt.Errorf("%s %s: status %d answers JSON, which the document does not describe", method, path, status)
		}
		if err := d.validate(t, ptr, body); err != nil {
			return fmt.Errorf("%s %s: status %d: the answer does not match the documented schema (%s): %v\n%.500s", method, path, status, ptr, err, body)
		}
	}
	return nil
}

// ---- the server in process ----

// answer is what the server answered a request handled in process.
type answer struct {
	status int
	body   []byte
	allow  string
	ctype  string
	path   string // the path as the server saw it, normalised
}

// inProcess runs one request through the Server's handler without a
// connection, from a loopback address.
func inProcess(s *Server, method, uri string, body []byte) answer {
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(uri)
	if body != nil {
		req.Header.SetContentType("application/json")
		req.SetBody(body)
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, nil)
	s.Handle(&ctx)
	return answer{status: ctx.Response.StatusCode(), body: append([]byte(nil), ctx.Response.Body()...),
		allow: string(ctx.Response.Header.Peek("Allow")), ctype: string(ctx.Response.Header.ContentType()),
		path: string(ctx.Path())}
}

// errorCode returns the code of an error body, "" when it is none.
func errorCode(body []byte) string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Error.Code
}

func newDocServer(t *testing.T) *Server {
	t.Helper()
	sc, err := wire.DecodeServeConfig(examples.ServeConfig)
	if err != nil {
		t.Fatal(err)
	}
	mc := &manualClock{}
	mc.set(1_000_000)
	s, err := New(Options{Config: sc, Clock: mc, ManualUpdates: true, Pprof: true, Logger: quietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOpenAPIServed: GET /api/v1/openapi.json answers docs/openapi.json.
func TestOpenAPIServed(t *testing.T) {
	ts := startServer(t, "", nil)
	status, body := ts.do("GET", "/api/v1/openapi.json", "")
	want, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	if status != 200 || !bytes.Equal(body, want) {
		t.Fatalf("GET /api/v1/openapi.json: status %d, %d bytes; want 200 and the %d bytes of %s", status, len(body), len(want), openAPIFile)
	}
	a := inProcess(ts.srv, "GET", "/api/v1/openapi.json", nil)
	if a.ctype != "application/json" {
		t.Errorf("GET /api/v1/openapi.json: Content-Type %q, want application/json", a.ctype)
	}
}

// ---- the document itself ----

var (
	statusKey    = regexp.MustCompile(`^([1-5][0-9][0-9]|[1-5]XX|default)$`)
	templateVar  = regexp.MustCompile(`\{([^{}/]+)\}`)
	pathItemKeys = append([]string{"summary", "description", "servers", "parameters", "$ref"}, openAPIMethods...)
)

// TestOpenAPIDocument checks that docs/openapi.json is an OpenAPI 3.1
// document: the fields the specification requires, every $ref resolving,
// every path parameter declared, unique operation ids, and every schema
// compiling as JSON Schema 2020-12 (the dialect of OpenAPI 3.1).
func TestOpenAPIDocument(t *testing.T) {
	d := loadOpenAPI(t)
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: "+format, append([]any{openAPIFile}, args...)...)
	}
	for k := range d.root {
		if !slices.Contains([]string{"openapi", "info", "jsonSchemaDialect", "servers", "paths", "webhooks",
			"components", "security", "tags", "externalDocs"}, k) && !strings.HasPrefix(k, "x-") {
			errorf("unknown top-level field %q", k)
		}
	}
	if v, _ := d.root["openapi"].(string); !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(v) {
		errorf("openapi is %q, want 3.1.x", v)
	}
	info, _ := d.root["info"].(map[string]any)
	if s, _ := info["title"].(string); s == "" {
		errorf("info.title is missing")
	}
	if s, _ := info["version"].(string); s == "" {
		errorf("info.version is missing")
	}

	// Every $ref resolves, and is local.
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if _, ok := d.resolve(ref); !ok {
					errorf("%s: $ref %q does not resolve", ptr, ref)
				}
			}
			for k, x := range v {
				walk(ptr+"/"+pointerToken(k), x)
			}
		case []any:
			for i, x := range v {
				walk(ptr+"/"+strconv.Itoa(i), x)
			}
		}
	}
	walk("#", d.root)

	paths, _ := d.root["paths"].(map[string]any)
	if len(paths) == 0 {
		errorf("no paths")
	}
	ids := map[string]string{}
	for p, iv := range paths {
		item, _ := iv.(map[string]any)
		if !strings.HasPrefix(p, "/") {
			errorf("path %q does not start with /", p)
		}
		for k := range item {
			if !slices.Contains(pathItemKeys, k) && !strings.HasPrefix(k, "x-") {
				errorf("%s: unknown path item field %q", p, k)
			}
		}
		pathParams := d.parameters(t, "#/paths/"+pointerToken(p)+"/parameters", item["parameters"])
		vars := map[string]bool{}
		for _, m := range templateVar.FindAllStringSubmatch(p, -1) {
			vars[m[1]] = true
		}
		for _, m := range openAPIMethods {
			ov, ok := item[m]
			if !ok {
				continue
			}
			o, _ := ov.(map[string]any)
			where := strings.ToUpper(m) + " " + p
			id, _ := o["operationId"].(string)
			if id == "" {
				errorf("%s: no operationId", where)
			} else if prev, dup := ids[id]; dup {
				errorf("%s: operationId %q is %s's too", where, id, prev)
			}
			ids[id] = where
			params := d.parameters(t, "#/paths/"+pointerToken(p)+"/"+m+"/parameters", o["parameters"])
			for k, v := range pathParams {
				if _, ok := params[k]; !ok {
					params[k] = v
				}
			}
			for v := range vars {
				pm, ok := params["path:"+v]
				if !ok {
					errorf("%s: the path parameter {%s} is not declared", where, v)
				} else if req, _ := pm["required"].(bool); !req {
					errorf("%s: the path parameter {%s} is not required", where, v)
				}
			}
			for k := range params {
				if name, ok := strings.CutPrefix(k, "path:"); ok && !vars[name] {
					errorf("%s: path parameter %q is not in the path", where, name)
				}
			}
			rs, _ := o["responses"].(map[string]any)
			if len(rs) == 0 {
				errorf("%s: no responses", where)
			}
			for code, rv := range rs {
				if !statusKey.MatchString(code) {
					errorf("%s: response key %q is not a status", where, code)
				}
				_, r := d.deref("", rv)
				if s, _ := r["description"].(string); s == "" {
					errorf("%s: response %s has no description", where, code)
				}
				d.checkContent(t, where+" response "+code, r["content"])
			}
			if rb, ok := o["requestBody"]; ok {
				_, r := d.deref("", rb)
				if r["content"] == nil {
					errorf("%s: requestBody has no content", where)
				}
				d.checkContent(t, where+" requestBody", r["content"])
			}
		}
	}

	// Every schema of the components compiles.
	for name := range d.schemas() {
		d.schema(t, "#/components/schemas/"+pointerToken(name))
	}
	for i := range d.ops {
		o := &d.ops[i]
		for _, code := range o.statuses() {
			for _, media := range []string{"application/json", "text/plain", "text/html", "application/octet-stream"} {
				if ptr := d.responseSchema(o, code, media); ptr != "" {
					d.schema(t, ptr)
				}
			}
		}
		if ptr, _ := d.requestSchema(o); ptr != "" {
			d.schema(t, ptr)
		}
	}
}

// parameters checks a list of parameter objects and returns them by
// "in:name".
func (d *openAPIDoc) parameters(t *testing.T, ptr string, v any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	list, _ := v.([]any)
	for i, pv := range list {
		_, p := d.deref(ptr+"/"+strconv.Itoa(i), pv)
		name, _ := p["name"].(string)
		in, _ := p["in"].(string)
		if name == "" || !slices.Contains([]string{"path", "query", "header", "cookie"}, in) {
			t.Errorf("%s: %s/%d: a parameter needs a name and in (path, query, header, cookie)", openAPIFile, ptr, i)
			continue
		}
		if _, ok := p["schema"]; !ok {
			t.Errorf("%s: %s/%d: parameter %s has no schema", openAPIFile, ptr, i, name)
		}
		if _, dup := out[in+":"+name]; dup {
			t.Errorf("%s: %s: parameter %s in %s twice", openAPIFile, ptr, name, in)
		}
		out[in+":"+name] = p
	}
	return out
}

// checkContent checks that every media type of a content map has a schema.
func (d *openAPIDoc) checkContent(t *testing.T, where string, v any) {
	t.Helper()
	content, _ := v.(map[string]any)
	for media, mv := range content {
		mt, _ := mv.(map[string]any)
		if _, ok := mt["schema"]; !ok {
			t.Errorf("%s: %s: media type %s has no schema", openAPIFile, where, media)
		}
	}
}

// ---- routes ----

// routeVocabulary returns the path segments the router compares request
// paths with: every string literal of routes.go used in a case clause, an
// equality, a prefix test or a constant, split at '/', that could be part
// of a path.
func routeVocabulary(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	pathLike := regexp.MustCompile(`^[a-z0-9._/-]*$`)
	seen := map[string]bool{"": true}
	lits := func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && pathLike.MatchString(s) {
					for _, seg := range strings.Split(s, "/") {
						seen[seg] = true
					}
				}
			}
			return true
		})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CaseClause:
			for _, e := range n.List {
				lits(e)
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				lits(n)
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && strings.Contains(sel.Sel.Name, "Prefix") {
				lits(n)
			}
		case *ast.GenDecl:
			if n.Tok == token.CONST {
				lits(n)
			}
		}
		return true
	})
	vocab := make([]string, 0, len(seen))
	for s := range seen {
		vocab = append(vocab, s)
	}
	slices.Sort(vocab)
	return vocab
}

// methodAgnostic are the documented paths whose handlers (Go's
// net/http/pprof) answer every method alike: no 405 to compare.
var methodAgnostic = []string{"/debug/pprof", "/debug/pprof/", "/debug/pprof/{profile}"}

// probeMethods are the methods a documented path is probed with.
var probeMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// TestOpenAPIRoutes checks the routes of the server against the document,
// both ways:
//
//   - every path the router recognises is documented with the methods it
//     takes: the server is probed, in process, with every path built from
//     the router's vocabulary (routeVocabulary, a placeholder segment and
//     the empty one), up to four segments below /api/v1/ and three below /;
//     a path is routed unless it answers 404 not_found, and a routed path
//     must match a documented template whose methods are the Allow of its
//     405 (OPTIONS, which no route takes);
//   - every documented path and method is routed: each template,
//     instantiated, answers OPTIONS with 405 and the documented methods,
//     and each documented method answers (with no body) a documented status
//     whose body the documented schema accepts.
func TestOpenAPIRoutes(t *testing.T) {
	d := loadOpenAPI(t)
	s := newDocServer(t)
	vocab := append(routeVocabulary(t), "p-1")
	for _, w := range []string{"pools", "operations", "heartbeat", "orchid", "healthz", "pprof"} {
		if !slices.Contains(vocab, w) {
			t.Fatalf("routeVocabulary found %v in routes.go, without %q: has routing changed?", vocab, w)
		}
	}
	// Problems are reported by kind, the first few of each: one missing
	// route shows up under many probed paths.
	problems := map[string][]string{}
	var kinds []string
	report := func(format string, args ...any) {
		if _, ok := problems[format]; !ok {
			kinds = append(kinds, format)
		}
		problems[format] = append(problems[format], fmt.Sprintf(format, args...))
	}
	checked := map[string]bool{}
	probes := 0
	probe := func(path string) {
		probes++
		a := inProcess(s, "OPTIONS", path, nil)
		if a.status == 404 && (errorCode(a.body) == CodeNotFound || !strings.HasPrefix(a.ctype, "application/json")) {
			return // no route (pprof answers an unknown profile with a text 404)
		}
		if checked[a.path] {
			return
		}
		checked[a.path] = true
		tmpl, ok := d.match(a.path)
		if !ok {
			report("%s (probed as %s) is routed (OPTIONS answers %d) but not documented", a.path, path, a.status)
			return
		}
		if slices.Contains(methodAgnostic, tmpl) {
			return
		}
		allow := strings.Split(a.allow, ", ")
		slices.Sort(allow)
		if want := d.methods(tmpl); a.status != 405 || !slices.Equal(allow, want) {
			report("%s (%s): OPTIONS answers %d with Allow %q; the document has the methods %v", a.path, tmpl, a.status, a.allow, want)
		}
	}
	var build func(prefix string, depth int)
	build = func(prefix string, depth int) {
		if depth == 0 {
			return
		}
		for _, seg := range vocab {
			p := prefix + seg
			probe(p)
			build(p+"/", depth-1)
		}
	}
	build("/api/v1/", 4)
	build("/", 3)
	t.Logf("probed %d paths built from %d segments of routes.go (%q); %d are routed", probes, len(vocab), vocab, len(checked))

	for _, segs := range d.paths {
		tmpl := "/" + strings.Join(segs, "/")
		inst := make([]string, len(segs))
		for i, seg := range segs {
			switch {
			case seg == "{profile}":
				inst[i] = "goroutine"
			case seg == "{file}":
				inst[i] = "app.js" // a file of the dashboard (package ui)
			case strings.HasPrefix(seg, "{"):
				inst[i] = "p-1"
			default:
				inst[i] = seg
			}
		}
		path := "/" + strings.Join(inst, "/")
		if !slices.Contains(methodAgnostic, tmpl) {
			a := inProcess(s, "OPTIONS", path, nil)
			allow := strings.Split(a.allow, ", ")
			slices.Sort(allow)
			if want := d.methods(tmpl); a.status != 405 || !slices.Equal(allow, want) {
				report("documented %s (as %s): OPTIONS answers %d with Allow %q, want 405 and %v: %.200s", tmpl, path, a.status, a.allow, want, a.body)
			}
		}
		for _, m := range probeMethods {
			if d.operation(tmpl, m) == nil {
				continue
			}
			a := inProcess(s, m, path, nil)
			if a.status == 405 || a.status == 404 && errorCode(a.body) == CodeNotFound {
				report("documented %s %s (as %s) is not routed: %d %.200s", m, tmpl, path, a.status, a.body)
				continue
			}
			if err := d.checkAnswer(t, m, a.path, a.status, a.ctype, a.body); err != nil {
				report("%v", err)
			}
		}
	}
	for _, k := range kinds {
		ps := problems[k]
		for _, p := range ps[:min(len(ps), 5)] {
			t.Error(p)
		}
		if len(ps) > 5 {
			t.Errorf("… and %d more like these", len(ps)-5)
		}
	}
}

// ---- request bodies ----

// requestFixtures say where each documented request body is sent: the path
// of the request for its operation id, on the server of newDocServer with
// setupRequestBodies run. n counts the requests, for fresh names.
var requestFixtures = map[string]func(n int) string{
	"putPool":        func(n int) string { return "/api/v1/pools/probe-" + strconv.Itoa(n) },
	"patchPool":      func(int) string { return "/api/v1/pools/research" },
	"patchConfig":    func(int) string { return "/api/v1/config" },
	"startOperation": func(int) string { return "/api/v1/operations" },
	"patchOperation": func(int) string { return "/api/v1/operations/probe-op" },
	"heartbeat":      func(int) string { return "/api/v1/nodes/probe-node/heartbeat" },
	"heartbeats":     func(int) string { return "/api/v1/heartbeats" },
	"solve":          func(int) string { return "/api/v1/solve" },
	"whatIf":         func(int) string { return "/api/v1/whatif" },
}

func setupRequestBodies(t *testing.T, s *Server) {
	t.Helper()
	a := inProcess(s, "POST", "/api/v1/operations", []byte(`{"id": "probe-op", "pool": "research",
		"tasks": [{"job_count": 10, "resources": {"cpu": 1, "memory": 1073741824}}]}`))
	if a.status != 201 {
		t.Fatalf("setup: %d %s", a.status, a.body)
	}
}

// variation is a request body derived from an example: a key removed, a
// value of the wrong type, an unknown key added.
type variation struct {
	what       string
	body       any
	mustReject bool // a wrong type or an unknown key: both must refuse it
}

// variations returns the variations of every object and array of the
// example v, at any depth.
func variations(v any) []variation {
	var out []variation
	var walk func(path string, v any, replace func(any) any)
	walk = func(path string, v any, replace func(any) any) {
		switch x := v.(type) {
		case map[string]any:
			out = append(out, variation{what: "unknown key " + path + ".x_unknown", mustReject: true,
				body: replace(with(x, "x_unknown", json.Number("1")))})
			for _, k := range sortedKeys(x) {
				kp := path + "." + k
				out = append(out, variation{what: "without " + kp, body: replace(without(x, k))})
				out = append(out, variation{what: "wrong type at " + kp, mustReject: true, body: replace(with(x, k, wrongType(x[k])))})
				walk(kp, x[k], func(nv any) any { return replace(with(x, k, nv)) })
			}
		case []any:
			for i := range x {
				ip := path + "[" + strconv.Itoa(i) + "]"
				out = append(out, variation{what: "wrong type at " + ip, mustReject: true, body: replace(withIndex(x, i, wrongType(x[i])))})
				walk(ip, x[i], func(nv any) any { return replace(withIndex(x, i, nv)) })
			}
		}
	}
	walk("$", v, func(nv any) any { return nv })
	return out
}

// wrongType returns a value of another JSON type than v that no field of
// the API takes where v is taken: a string for a boolean, else true.
func wrongType(v any) any {
	if _, ok := v.(bool); ok {
		return "x"
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func with(m map[string]any, k string, v any) map[string]any {
	c := make(map[string]any, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	c[k] = v
	return c
}

func without(m map[string]any, k string) map[string]any {
	c := with(m, k, nil)
	delete(c, k)
	return c
}

func withIndex(a []any, i int, v any) []any {
	c := slices.Clone(a)
	c[i] = v
	return c
}

// entryRefused reports whether an answer of POST /api/v1/heartbeats has a
// heartbeat refused on its own: the batch answers 200, and the heartbeat's
// error is in its entry.
func entryRefused(a answer) bool {
	if a.status != 200 || !strings.HasSuffix(a.path, "/heartbeats") {
		return false
	}
	var v struct {
		Responses []struct {
			Error json.RawMessage `json:"error"`
		} `json:"responses"`
	}
	if json.Unmarshal(a.body, &v) != nil {
		return false
	}
	for _, r := range v.Responses {
		if r.Error != nil {
			return true
		}
	}
	return false
}

// referenceCodes are the errors about a value that refers to another (a
// snapshot's assignment to an element, a pool's parent): a body without the
// value referred to is refused for a reason no schema states.
var referenceCodes = []string{wire.CodeUnknownElement, CodeUnknownPool}

// TestOpenAPIRequestBodies: every documented request body has an example
// that its schema accepts and the server takes with a documented status;
// and on every variation of the example (variations) the schema and the
// server agree — both take it, or the schema refuses it and the server
// answers 400. So a key is required in the document exactly when the
// server needs it, and the document types every value the server checks.
func TestOpenAPIRequestBodies(t *testing.T) {
	d := loadOpenAPI(t)
	s := newDocServer(t)
	setupRequestBodies(t, s)
	n := 0
	for i := range d.ops {
		o := &d.ops[i]
		ptr, example := d.requestSchema(o)
		if ptr == "" {
			continue
		}
		id, _ := o.op["operationId"].(string)
		fixture := requestFixtures[id]
		if fixture == nil {
			t.Errorf("%s %s (%s) takes a body: add it to requestFixtures", o.method, o.path, id)
			continue
		}
		if example == nil {
			t.Errorf("%s %s: the request body has no example", o.method, o.path)
			continue
		}
		send := func(body any) (bool, answer, error) {
			raw, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			n++
			a := inProcess(s, o.method, fixture(n), raw)
			if err := d.checkAnswer(t, o.method, a.path, a.status, a.ctype, a.body); err != nil {
				t.Error(err)
			}
			return d.validate(t, ptr, raw) == nil, a, nil
		}
		ok, a, _ := send(example)
		if !ok {
			t.Errorf("%s %s: the example does not match the request schema: %v", o.method, o.path, d.validate(t, ptr, mustJSON(example)))
		}
		if a.status >= 300 || entryRefused(a) {
			t.Errorf("%s %s: the example answers %d: %s", o.method, o.path, a.status, a.body)
		}
		// Decode with numbers kept as written, as the server sees them.
		var ex any
		dec := json.NewDecoder(bytes.NewReader(mustJSON(example)))
		dec.UseNumber()
		if err := dec.Decode(&ex); err != nil {
			t.Fatal(err)
		}
		for _, v := range variations(ex) {
			schemaOK, a, _ := send(v.body)
			serverOK := a.status != 400 && !entryRefused(a)
			switch {
			case v.mustReject && (schemaOK || serverOK):
				t.Errorf("%s %s, %s: the schema accepts it: %v, the server answers %d %s", o.method, o.path, v.what, schemaOK, a.status, a.body)
			case schemaOK && !serverOK && !v.mustReject && slices.Contains(referenceCodes, errorCode(a.body)):
				// A key removed that another value refers to: no schema says so.
			case schemaOK != serverOK:
				t.Errorf("%s %s, %s: the schema accepts it: %v, the server answers %d %s", o.method, o.path, v.what, schemaOK, a.status, a.body)
			}
		}
	}
}
