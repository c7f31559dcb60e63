package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// PollError is Poll's error when the condition did not hold in time.
type PollError struct {
	Timeout time.Duration
	Last    error // the condition's last error, if it returned one it tolerated
}

func (e *PollError) Error() string {
	if e.Last != nil {
		return fmt.Sprintf("not done within %v (last: %v)", e.Timeout, e.Last)
	}
	return fmt.Sprintf("not done within %v", e.Timeout)
}

// Retry wraps an error a Poll condition returns to say "not yet": Poll
// keeps polling and reports the last one if time runs out.
func Retry(err error) error { return &retryError{err} }

type retryError struct{ err error }

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// Poll calls cond every interval until it returns true, returns an error
// (other than one wrapped by Retry), ctx ends or timeout passes; it never
// sleeps past the deadline. The first call is immediate.
func Poll(ctx context.Context, timeout, interval time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &PollError{Timeout: timeout, Last: last}
			}
			return ctx.Err()
		case <-t.C:
		}
		done, err := cond(ctx)
		if err != nil {
			var re *retryError
			if !errors.As(err, &re) {
				if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
					continue // the deadline, seen by the condition's request
				}
				return err
			}
			last = re.err
		} else if done {
			return nil
		}
		t.Reset(interval)
	}
}

func randomToken() string {
	var b [24]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func certPool(pemData []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, errors.New("kubetest: cannot parse the CA certificate")
	}
	return pool, nil
}
