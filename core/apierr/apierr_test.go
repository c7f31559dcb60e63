package apierr

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorText(t *testing.T) {
	f := func(e Error, want string) {
		t.Helper()
		if got := e.Error(); got != want {
			t.Errorf("%+v.Error() = %q, want %q", e, got, want)
		}
	}
	f(Error{Message: "m"}, "m")
	f(Error{Path: "$", Message: "cannot parse JSON"}, "$: cannot parse JSON")
	f(Error{Path: "$.a[1].b", Message: "cannot use 1"}, "$.a[1].b: cannot use 1")
	f(Error{Pkg: "tree", Path: "weight", Message: "cannot use weight -1"}, "tree: cannot use weight -1")
	f(Error{Pkg: "tree", Message: "cannot find pool \"x\""}, "tree: cannot find pool \"x\"")
	f(Error{Path: "pool", Message: "cannot start operation"}, "cannot start operation")
	f(Error{Pkg: "p", Path: "$.x", Message: "m"}, "p: $.x: m")
}

func TestAbsolute(t *testing.T) {
	f := func(path string, want bool) {
		t.Helper()
		if got := (&Error{Path: path}).Absolute(); got != want {
			t.Errorf("Absolute() of path %q = %v, want %v", path, got, want)
		}
	}
	f("", false)
	f("$", true)
	f("$.tree.children[0]", true)
	f("weight", false)
	f("[0].cpu", false)
}

func TestJoin(t *testing.T) {
	f := func(base, rel, want string) {
		t.Helper()
		if got := Join(base, rel); got != want {
			t.Errorf("Join(%q, %q) = %q, want %q", base, rel, got, want)
		}
	}
	f("$", "", "$")
	f("$", "pool", "$.pool")
	f("$.tree.children[1]", "resource_limits.cpu", "$.tree.children[1].resource_limits.cpu")
	f("$.tasks", "[2].job_count", "$.tasks[2].job_count")
	f("", "weight", ".weight")
}

type detail struct{ n int }

func (d *detail) Error() string { return fmt.Sprint("detail ", d.n) }

var errSentinel = errors.New("apierr_test: sentinel")

func (d *detail) Is(target error) bool { return target == errSentinel && d.n > 0 }

func TestUnwrap(t *testing.T) {
	d := &detail{n: 1}
	var err error = fmt.Errorf("context: %w", &Error{Code: CodeInvalidValue, Path: "pool", Message: "m", Err: d})

	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidValue || e.Path != "pool" {
		t.Fatalf("errors.As(%v) found %+v, want the *Error", err, e)
	}
	var got *detail
	if !errors.As(err, &got) || got != d {
		t.Errorf("errors.As(%v) did not find the detail", err)
	}
	if !errors.Is(err, errSentinel) {
		t.Errorf("errors.Is(%v, sentinel) = false through the detail", err)
	}
	if errors.Is(&Error{Err: &detail{}}, errSentinel) || errors.Is(&Error{}, errSentinel) {
		t.Errorf("errors.Is matches without a matching detail")
	}
	if (&Error{}).Unwrap() != nil {
		t.Errorf("Unwrap of an Error without Err is not nil")
	}
}
