package invariants

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	Check(true, "never printed %d", 1) // must not panic in either build

	var msg string
	func() {
		defer func() {
			if r := recover(); r != nil {
				msg, _ = r.(string)
			}
		}()
		Check(false, "sum %d exceeds limit %d", 5, 3)
	}()
	if Enabled {
		if want := "BUG: sum 5 exceeds limit 3"; msg != want {
			t.Fatalf("Check(false) panicked with %q, want %q", msg, want)
		}
	} else if msg != "" {
		t.Fatalf("Check(false) panicked with %q although invariants are disabled", msg)
	}
	if Enabled && !strings.HasPrefix(msg, "BUG: ") {
		t.Fatalf("panic message lacks the BUG: prefix: %q", msg)
	}
}
