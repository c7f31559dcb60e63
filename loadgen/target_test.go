package loadgen

import "testing"

func TestCheckTarget(t *testing.T) {
	f := func(target, want string) {
		t.Helper()
		got, err := CheckTarget(target)
		if want == "" {
			if err == nil {
				t.Errorf("CheckTarget(%q) = %q, want an error", target, got)
			}
			return
		}
		if err != nil || got != want {
			t.Errorf("CheckTarget(%q) = %q, %v; want %q", target, got, err, want)
		}
	}
	// Loopback: accepted.
	f("http://127.0.0.1:8080", "127.0.0.1:8080")
	f("http://127.0.0.1:8080/", "127.0.0.1:8080")
	f("http://127.1.2.3:9", "127.1.2.3:9")
	f("http://localhost:8080", "127.0.0.1:8080")
	f("http://LocalHost:8080", "127.0.0.1:8080")
	f("http://[::1]:8080", "[::1]:8080")
	f("http://[::ffff:127.0.0.1]:8080", "127.0.0.1:8080")
	f("http://127.0.0.1", "127.0.0.1:80")
	f("https://127.0.0.1:8443", "127.0.0.1:8443") // a server with --tls-cert
	f("https://localhost", "127.0.0.1:443")

	// Not loopback, or not plainly: refused.
	f("", "")
	f("127.0.0.1:8080", "")
	f("https://10.0.0.1:8443", "")
	f("ftp://127.0.0.1:8080", "")
	f("http://10.0.0.1:8080", "")
	f("http://192.168.1.1:8080", "")
	f("http://172.16.0.1:8080", "")
	f("http://8.8.8.8:80", "")
	f("http://0.0.0.0:8080", "")
	f("http://[::]:8080", "")
	f("http://[fe80::1%25lo]:8080", "")
	f("http://[::1%25lo]:8080", "")
	f("http://example.com:8080", "")
	f("http://localhost.:8080", "")
	f("http://localhost.example.com:8080", "")
	f("http://127.0.0.1.nip.io:8080", "")
	f("http://2130706433:8080", "")
	f("http://0177.0.0.1:8080", "")
	f("http://0x7f.0.0.1:8080", "")
	f("http://user:pw@127.0.0.1:8080", "")
	f("http://127.0.0.1:8080/api", "")
	f("http://127.0.0.1:8080?x=1", "")
	f("http://127.0.0.1:8080#frag", "")
	f("http://127.0.0.1:0", "")
	f("http://127.0.0.1:65536", "")
	f("http://127.0.0.1:", "")
	f("http://127.0.0.1:http", "")
	f("http://:8080", "")
}
