package facade

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairsched/fairsched/examples"
)

// docs/api.md's examples are run by TestAPIDocExamples. The rules the
// document follows so that they can be:
//
//   - every curl command is in a ```sh block, a request to
//     http://127.0.0.1:8080 (make run's address), and ends with a comment
//     naming the status it answers: curl … # → 201;
//   - a ```sh block may also hold comments and "sleep N" (N seconds pass);
//   - a ```json block right after a ```sh block (blank lines between at
//     most) is the answer of the block's last request, and must have the
//     shape of the real answer: the same keys at every level, values of the
//     same JSON types, arrays no longer than the real ones (and empty only
//     when they are); the numbers may differ.
//
// The examples run in order, as one session, against a server with make
// run's pools (examples/serve.json) on a manual clock: before each request
// one second passes and the fair-share update runs, as it would while a
// person types the commands; "sleep N" lets N seconds pass, one update per
// second.

const apiDocFile = "../docs/api.md"

var apiDocDump = flag.Bool("apidoc.dump", false, "print the answer of every example of docs/api.md")

// docStep is one line of an example block: a request or a sleep.
type docStep struct {
	line    int // in docs/api.md
	text    string
	sleep   int // seconds, for "sleep N"
	method  string
	url     string
	body    []byte
	headers [][2]string
	want    int
	// json and form: the body was given with curl --json, or -d and its
	// kin (which send a form's Content-Type unless a -H names one).
	json, form bool
}

// docBlock is a ```sh block with the ```json answer that follows it.
type docBlock struct {
	line   int
	steps  []docStep
	answer []byte // the ```json block after it, or nil
	aline  int
}

var expectMarker = regexp.MustCompile(`^#\s*→\s*([1-5][0-9][0-9])\b`)

// parseAPIDoc returns the example blocks of a Markdown file.
func parseAPIDoc(t *testing.T, file string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	var fence string // the open block's language, "" outside
	var content []string
	start := 0
	lastShEnd := -1 // line where the last ```sh block closed
	blank := true   // only blank lines since lastShEnd
	for sc.Scan() {
		line++
		l := sc.Text()
		if fence == "" {
			if lang, ok := strings.CutPrefix(l, "```"); ok {
				fence, content, start = strings.TrimSpace(lang)+" ", nil, line
				continue
			}
			if strings.TrimSpace(l) != "" {
				blank = false
			}
			continue
		}
		if strings.TrimSpace(l) != "```" {
			content = append(content, l)
			if fence != "sh " && strings.HasPrefix(strings.TrimSpace(l), "curl ") {
				t.Errorf("%s:%d: a curl command outside a ```sh block is not run by the test", file, line)
			}
			continue
		}
		lang := strings.TrimSpace(fence)
		fence = ""
		switch lang {
		case "sh":
			blocks = append(blocks, docBlock{line: start, steps: parseSteps(t, file, start, content)})
			lastShEnd, blank = line, true
		case "json":
			if lastShEnd >= 0 && blank && len(blocks) > 0 && blocks[len(blocks)-1].answer == nil {
				blocks[len(blocks)-1].answer = []byte(strings.Join(content, "\n"))
				blocks[len(blocks)-1].aline = start
			}
			lastShEnd = -1
		default:
			lastShEnd = -1
		}
	}
	if fence != "" {
		t.Fatalf("%s:%d: the block does not end", file, start)
	}
	return blocks
}

// parseSteps parses the lines of a ```sh block, which starts at line start.
func parseSteps(t *testing.T, file string, start int, lines []string) []docStep {
	t.Helper()
	var steps []docStep
	for i := 0; i < len(lines); i++ {
		at := start + 1 + i
		l := lines[i]
		words, comment, err := shellWords(l)
		// A command goes on over the next lines after a \ at the end of the
		// line, and while a quote is open.
		for i+1 < len(lines) && (strings.HasSuffix(l, "\\") || errors.Is(err, errUnterminated)) {
			i++
			if strings.HasSuffix(l, "\\") {
				l = strings.TrimSuffix(l, "\\")
			}
			l += "\n" + lines[i]
			words, comment, err = shellWords(l)
		}
		if err != nil {
			t.Errorf("%s:%d: %v", file, at, err)
			continue
		}
		if len(words) == 0 {
			continue
		}
		switch words[0] {
		case "sleep":
			n, err := strconv.Atoi(words[len(words)-1])
			if len(words) != 2 || err != nil || n <= 0 {
				t.Errorf("%s:%d: want sleep SECONDS", file, at)
				continue
			}
			steps = append(steps, docStep{line: at, text: l, sleep: n})
		case "curl":
			st, err := parseCurl(words[1:])
			if err != nil {
				t.Errorf("%s:%d: %v", file, at, err)
				continue
			}
			m := expectMarker.FindStringSubmatch(comment)
			if m == nil {
				t.Errorf("%s:%d: the command does not end with the status it answers (# → 200)", file, at)
				continue
			}
			st.want, _ = strconv.Atoi(m[1])
			st.line, st.text = at, l
			steps = append(steps, st)
		default:
			t.Errorf("%s:%d: an example block may hold curl and sleep commands only, not %q", file, at, words[0])
		}
	}
	return steps
}

var errUnterminated = errors.New("unterminated")

// shellWords splits a command line as a POSIX shell would, for the quoting
// the examples use: '…', "…" with \ escapes, \ outside quotes. It returns
// the words up to an unquoted | or #, and the comment after #.
func shellWords(s string) (words []string, comment string, err error) {
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		case c == '#' && !inWord:
			flush()
			return words, s[i:], nil
		case c == '|' || c == '>':
			// The rest is for the reader's shell (a pipe, a redirection).
			flush()
			if j := strings.Index(s[i:], "#"); j >= 0 {
				return words, s[i+j:], nil
			}
			return words, "", nil
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, "", fmt.Errorf("%w ' in %q", errUnterminated, s)
			}
			w.WriteString(s[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			inWord = true
			for i++; ; i++ {
				if i >= len(s) {
					return nil, "", fmt.Errorf("%w \" in %q", errUnterminated, s)
				}
				if s[i] == '"' {
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				} else if s[i] == '$' || s[i] == '`' {
					return nil, "", fmt.Errorf("cannot expand %q in %q: write the value", s[i:], s)
				}
				w.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		case c == '$' || c == '`' || c == ';' || c == '&':
			return nil, "", fmt.Errorf("cannot run %q: the examples are single curl commands with literal arguments", s)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, "", nil
}

// parseCurl reads the curl options the examples use.
func parseCurl(args []string) (docStep, error) {
	var st docStep
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("curl %s wants a value", a)
			}
			i++
			return args[i], nil
		}
		var err error
		var v string
		switch a {
		case "-s", "-S", "-sS", "--silent", "--show-error", "-i", "--include":
		case "-X", "--request":
			st.method, err = next()
		case "-d", "--data", "--data-raw", "--data-binary", "--json":
			if v, err = next(); err == nil {
				if file, ok := strings.CutPrefix(v, "@"); ok && a != "--data-raw" {
					st.body, err = os.ReadFile(filepath.Join("..", file))
				} else {
					st.body = []byte(v)
				}
			}
			// What curl sends: --json declares JSON (and accepts it), the
			// others a form unless a -H says otherwise.
			if a == "--json" {
				st.json = true
			} else {
				st.form = true
			}
		case "-H", "--header":
			if v, err = next(); err == nil {
				k, val, ok := strings.Cut(v, ":")
				if !ok {
					err = fmt.Errorf("curl -H %q: want \"Name: value\"", v)
				}
				st.headers = append(st.headers, [2]string{strings.TrimSpace(k), strings.TrimSpace(val)})
			}
		case "-o", "--output", "-w", "--write-out":
			_, err = next()
		default:
			if strings.HasPrefix(a, "-") {
				return st, fmt.Errorf("curl option %s: the test does not know it", a)
			}
			if st.url != "" {
				return st, fmt.Errorf("curl with two URLs: %s and %s", st.url, a)
			}
			st.url = a
		}
		if err != nil {
			return st, err
		}
	}
	hasType := slices.ContainsFunc(st.headers, func(h [2]string) bool { return strings.EqualFold(h[0], "Content-Type") })
	switch {
	case st.json && !hasType:
		st.headers = append(st.headers, [2]string{"Content-Type", "application/json"}, [2]string{"Accept", "application/json"})
	case st.form && !hasType:
		st.headers = append(st.headers, [2]string{"Content-Type", "application/x-www-form-urlencoded"})
	}
	if !strings.HasPrefix(st.url, "http://127.0.0.1:8080/") {
		return st, fmt.Errorf("curl %q: want a URL of make run's server, http://127.0.0.1:8080/…", st.url)
	}
	if st.method == "" {
		st.method = "GET"
		if st.body != nil {
			st.method = "POST"
		}
	}
	return st, nil
}

// sameShape reports where the sample answer of the document and the real
// one differ in shape (see the rules above).
func sameShape(path string, sample, real any) []string {
	switch s := sample.(type) {
	case map[string]any:
		r, ok := real.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: the document shows an object, the server answers %s", path, jsonKind(real))}
		}
		var out []string
		for _, k := range sortedKeys(s) {
			if _, ok := r[k]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: the document shows it, the server does not answer it", path, k))
				continue
			}
			out = append(out, sameShape(path+"."+k, s[k], r[k])...)
		}
		for _, k := range sortedKeys(r) {
			if _, ok := s[k]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: the server answers it, the document does not show it", path, k))
			}
		}
		return out
	case []any:
		r, ok := real.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: the document shows an array, the server answers %s", path, jsonKind(real))}
		}
		if len(s) > len(r) || len(s) == 0 && len(r) > 0 {
			return []string{fmt.Sprintf("%s: the document shows %d elements, the server answers %d", path, len(s), len(r))}
		}
		var out []string
		for i := range s {
			out = append(out, sameShape(path+"["+strconv.Itoa(i)+"]", s[i], r[i])...)
		}
		return out
	}
	if jsonKind(sample) != jsonKind(real) {
		return []string{fmt.Sprintf("%s: the document shows %s, the server answers %s", path, jsonKind(sample), jsonKind(real))}
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// TestAPIDocExamples runs the examples of docs/api.md against a server on a
// free loopback port and checks that each answers the status the document
// marks, that every answer is one the OpenAPI document describes (status
// and body schema), that the sample answers have the real answers' shape,
// and that every documented operation has an example.
func TestAPIDocExamples(t *testing.T) {
	d := loadOpenAPI(t)
	blocks := parseAPIDoc(t, apiDocFile)
	ts := startServer(t, string(examples.ServeConfig), func(o *Options) { o.Pprof = true })
	hc := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer hc.CloseIdleConnections()
	covered := map[string]bool{}
	requests := 0
	for _, b := range blocks {
		var last []byte
		for _, st := range b.steps {
			if st.sleep > 0 {
				for range st.sleep {
					ts.clock.advanceAndUpdateBy(ts.srv, 1)
				}
				continue
			}
			ts.clock.advanceAndUpdateBy(ts.srv, 1)
			requests++
			url := ts.base + strings.TrimPrefix(st.url, "http://127.0.0.1:8080")
			req, err := http.NewRequest(st.method, url, bytes.NewReader(st.body))
			if err != nil {
				t.Fatalf("%s:%d: %v", apiDocFile, st.line, err)
			}
			if st.body == nil {
				req.Body = nil
			}
			for _, h := range st.headers {
				req.Header.Set(h[0], h[1])
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("%s:%d: %v", apiDocFile, st.line, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			last = body
			if *apiDocDump {
				t.Logf("%s:%d: %s %s → %d\n%s", apiDocFile, st.line, st.method, req.URL.Path, resp.StatusCode, body)
			}
			if resp.StatusCode != st.want {
				t.Errorf("%s:%d: %s\nanswers %d, the document says %d: %.600s", apiDocFile, st.line, st.text, resp.StatusCode, st.want, body)
			}
			if code := errorCode(body); resp.StatusCode == 405 || resp.StatusCode == 404 && code == CodeNotFound {
				// An example of a method or path the API does not have: the
				// answer is an error body all the same.
				if err := d.validate(t, "#/components/schemas/Error", body); err != nil {
					t.Errorf("%s:%d: %v", apiDocFile, st.line, err)
				}
			} else if err := d.checkAnswer(t, st.method, req.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"), body); err != nil {
				t.Errorf("%s:%d: %v", apiDocFile, st.line, err)
			}
			if tmpl, ok := d.match(req.URL.Path); ok {
				covered[st.method+" "+tmpl] = true
				if o := d.operation(tmpl, st.method); o != nil && st.want < 300 {
					checkExampleBody(t, d, o, st)
				}
			}
		}
		if b.answer == nil {
			continue
		}
		var sample, real any
		if err := json.Unmarshal(b.answer, &sample); err != nil {
			t.Errorf("%s:%d: the sample answer is not JSON: %v", apiDocFile, b.aline, err)
			continue
		}
		if err := json.Unmarshal(last, &real); err != nil {
			t.Errorf("%s:%d: a sample answer follows a request whose answer is not JSON: %.200s", apiDocFile, b.aline, last)
			continue
		}
		for _, p := range sameShape("$", sample, real) {
			t.Errorf("%s:%d: the sample answer differs from the server's: %s\nthe server's: %s", apiDocFile, b.aline, p, last)
		}
	}
	for _, o := range d.ops {
		if !covered[o.method+" "+o.path] {
			t.Errorf("%s: no example of %s %s", apiDocFile, o.method, o.path)
		}
	}
	t.Logf("%d examples in %d blocks", requests, len(blocks))
	if slices.ContainsFunc(blocks, func(b docBlock) bool { return len(b.steps) == 0 }) {
		t.Errorf("%s: a ```sh block without a command", apiDocFile)
	}
}

// advanceAndUpdateBy lets sec seconds pass and runs the fair-share update.
func (c *manualClock) advanceAndUpdateBy(s *Server, sec float64) {
	c.AdvanceSeconds(sec)
	s.UpdateFairShare()
}

// checkExampleBody checks the body of an example that succeeds against its
// documented request schema: the schema accepts it, and refuses each of its
// variations with a value of the wrong type.
func checkExampleBody(t *testing.T, d *openAPIDoc, o *docOperation, st docStep) {
	t.Helper()
	ptr, _ := d.requestSchema(o)
	if ptr == "" || st.body == nil {
		return
	}
	if err := d.validate(t, ptr, st.body); err != nil {
		t.Errorf("%s:%d: the body does not match the documented request schema: %v", apiDocFile, st.line, err)
		return
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(st.body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	for _, va := range variations(v) {
		if !va.mustReject {
			continue
		}
		if d.validate(t, ptr, mustJSON(va.body)) == nil {
			t.Errorf("%s:%d: the documented request schema accepts the body with %s", apiDocFile, st.line, va.what)
		}
	}
}
