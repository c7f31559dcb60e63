package facade

import (
	"net/url"
	"strconv"
	"strings"

	gojson "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/server"
	"github.com/fairsched/fairsched/wire"
)

// ---- explanations and what-if (docs/api.md#explanations-and-what-if) ----

// explainOperation answers why an operation is in its state
// (server.Server.ExplainOperation): 404 for an unknown one. Anyone who may
// read the operation may read its explanation.
func (s *Server) explainOperation(ctx *fasthttp.RequestCtx, id string) {
	if !s.checkName(ctx, id, "an operation id", "$.url.id", false) {
		return
	}
	e, err := s.core.ExplainOperation(id)
	s.writeExplanation(ctx, e, err)
}

// explainPool answers a pool's fair share and starvation
// (server.Server.ExplainPool): 404 for an unknown pool.
func (s *Server) explainPool(ctx *fasthttp.RequestCtx, name string) {
	if !s.checkName(ctx, name, "a pool name", "$.url.name", true) {
		return
	}
	e, err := s.core.ExplainPool(name)
	s.writeExplanation(ctx, e, err)
}

func (s *Server) writeExplanation(ctx *fasthttp.RequestCtx, e schedule.Explanation, err error) {
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	// NB: computed on request, off the heartbeat path; the struct's JSON
	// tags are the answer's shape (core/schedule's TestExplainJSON).
	b, err := gojson.Marshal(&e)
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte { return append(dst, b...) })
}

// whatIf previews changes (POST /api/v1/whatif): each change is the
// method, path and body of a pool PUT, PATCH or DELETE or a config PATCH,
// decided in order on a copy of the current state (server.Preview) by the
// functions the real endpoints decide with (putPoolOn, patchPoolOn,
// deletePoolOn, patchConfigOn), with the caller's permissions checked
// against the pools as the earlier changes left them. A refused change
// answers the real endpoint's status, code and message, its path under
// $.changes[i]; otherwise every pool before and after. Nothing changes:
// no store write, no audit line.
func (s *Server) whatIf(ctx *fasthttp.RequestCtx) {
	select {
	case s.solves <- struct{}{}:
		defer func() { <-s.solves }()
	default:
		s.writeError(ctx, fasthttp.StatusTooManyRequests, &wire.Error{Code: CodeOverloaded,
			Message: "cannot run more than " + itoa(cap(s.solves)) + " what-ifs and solves at once: retry later"})
		return
	}
	changes, err := wire.DecodeWhatIf(ctx.PostBody())
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	p := s.core.Preview()
	id := who(ctx)
	for i := range changes {
		c := &changer{id: id, acl: func() aclIndex { return buildACL(p.Pools(nil)) }}
		s.previewChange(p, c, &changes[i])
		if r := c.refused; r != nil {
			if r.own {
				r.e.Path = jsonpath.Index("$.changes", i) + r.e.Path
			} else {
				r.e.Path = changePath(i, r.e.Path)
			}
			s.writeError(ctx, r.status, r.e)
			return
		}
	}
	res := p.Result()
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte {
		dst = append(dst, `{"pools":{`...)
		for i := range res {
			pc := &res[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonpath.AppendString(dst, pc.Name)
			dst = append(dst, `:{"before":`...)
			dst = appendOrchidOrNull(dst, pc.Before)
			dst = append(dst, `,"after":`...)
			dst = appendOrchidOrNull(dst, pc.After)
			dst = append(dst, '}')
		}
		return append(dst, "}}"...)
	})
}

func appendOrchidOrNull(dst []byte, p *schedule.PoolInfo) []byte {
	if p == nil {
		return append(dst, "null"...)
	}
	return wire.AppendPoolOrchid(dst, p)
}

// previewChange decides one change of a what-if on p; a refusal is c's,
// with the real request's path.
func (s *Server) previewChange(p *server.Preview, c *changer, ch *wire.WhatIfChange) {
	const takes = ": a what-if takes PUT, PATCH and DELETE of /api/v1/pools/{name} and PATCH /api/v1/config"
	// The what-if's own refusals: their paths are in the change.
	own := func(path, msg string) {
		c.refused = &refusal{status: fasthttp.StatusBadRequest, e: &wire.Error{Code: wire.CodeInvalidValue, Path: path, Message: msg}, own: true}
	}
	badPath := "cannot preview a change of " + strconv.Quote(truncate(ch.Path, 64)) + takes
	badMethod := "cannot preview " + strconv.Quote(truncate(ch.Method, 16)) + " " + truncate(ch.Path, 64) + takes
	path, err := url.PathUnescape(ch.Path)
	rest, ok := strings.CutPrefix(path, apiPrefix)
	if err != nil || !ok || strings.ContainsAny(path, "?#") {
		own(".path", badPath)
		return
	}
	if c.id != nil {
		if why := roleRefusalOf(c.id, ch.Method, []byte(path)); why != "" {
			c.refused = &refusal{status: fasthttp.StatusForbidden, e: &wire.Error{Code: CodeForbidden, Message: why}, own: true}
			return
		}
	}
	switch name, isPool := strings.CutPrefix(rest, "pools/"); {
	case rest == "config":
		if ch.Method != "PATCH" {
			own(".method", badMethod)
			return
		}
		s.patchConfigOn(p, c, ch.Body)
	case isPool && name != "" && !strings.Contains(name, "/"):
		switch ch.Method {
		case "PUT":
			s.putPoolOn(p, c, name, ch.Body)
		case "PATCH":
			s.patchPoolOn(p, c, name, ch.Body)
		case "DELETE":
			s.deletePoolOn(p, c, name)
		default:
			own(".method", badMethod)
		}
	default:
		own(".path", badPath)
	}
}

// changePath is the path in a what-if of path, an error's path in the
// request that change i previews: the URL's parameters are the change's
// path ("$.url.name" → "$.changes[i].path"), and the body's paths are
// under the change's body ("$.weight" → "$.changes[i].body.weight", "$" →
// "$.changes[i].body").
func changePath(i int, path string) string {
	c := jsonpath.Index("$.changes", i)
	if path == "$.url" || strings.HasPrefix(path, "$.url.") {
		return c + ".path"
	}
	return c + ".body" + strings.TrimPrefix(path, "$")
}
