// Package ui is the web dashboard of fairsched serve (docs/ui.md): static
// files — one HTML page, JavaScript modules and a style sheet written for
// this repository, with no build step and nothing fetched from elsewhere —
// embedded in the binary and served by the facade at /ui/.
//
// The page reads the HTTP API (the orchid, the operation and node lists,
// the pools' history, the explanations, what-if previews, PATCH of a pool,
// solve) from the server that serves it; it sends the bearer token a
// person types when the API answers 401, kept in the tab's session storage.
//
// Files are read once, when the package is initialised, and are read-only:
// callers must not modify a File's Body.
package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"path"
	"sort"
)

//go:embed static
var static embed.FS

// File is a file of the dashboard, ready to serve.
type File struct {
	Name        string // "app.js"
	ContentType string // "text/javascript; charset=utf-8"
	// ETag is a strong validator of Body: a quoted hash of it.
	ETag string
	Body []byte
}

// Index is the name of the page served at /ui/.
const Index = "index.html"

// ContentSecurityPolicy is the policy of the dashboard's responses: the
// server's own scripts, styles, images and API only; no inline script or
// style element, no plugins, no framing, no forms posted elsewhere.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// contentTypes are the media types of the extensions the dashboard uses;
// a file of another extension is an error at initialisation (see files).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

var files = load()

// load reads the embedded files. The folder is flat: /ui/{file}.
func load() map[string]*File {
	out := map[string]*File{}
	entries, err := fs.ReadDir(static, "static")
	if err != nil {
		panic("BUG: ui: " + err.Error())
	}
	for _, e := range entries {
		if e.IsDir() {
			panic("BUG: ui: static/" + e.Name() + " is a folder; the dashboard's files are flat")
		}
		ct, ok := contentTypes[path.Ext(e.Name())]
		if !ok {
			panic("BUG: ui: static/" + e.Name() + " has no content type: add its extension to contentTypes")
		}
		body, err := static.ReadFile("static/" + e.Name())
		if err != nil {
			panic("BUG: ui: " + err.Error())
		}
		sum := sha256.Sum256(body)
		out[e.Name()] = &File{Name: e.Name(), ContentType: ct, ETag: `"` + hex.EncodeToString(sum[:12]) + `"`, Body: body}
	}
	if out[Index] == nil {
		panic("BUG: ui: no " + Index)
	}
	return out
}

// Lookup returns the file served at /ui/name; the empty name is the page.
func Lookup(name string) (*File, bool) {
	if name == "" {
		name = Index
	}
	f, ok := files[name]
	return f, ok
}

// Names returns the names of the files, sorted.
func Names() []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
