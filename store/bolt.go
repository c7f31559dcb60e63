package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// FileName is the database file in a data directory.
const FileName = "fairsched.db"

// Bolt is the embedded Backend: one bbolt file, DIR/fairsched.db, locked
// against a second process, every transaction synced to disk before Apply
// returns.
type Bolt struct {
	db   *bolt.DB
	path string
}

// OpenBolt opens (or creates) the store in dir. It fails with ErrLocked
// when another process has it open, and with ErrNewerSchema when a newer
// binary wrote it.
func OpenBolt(dir string) (*Bolt, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: creating the data directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	// bbolt locks the file (flock); Timeout makes a held lock an error
	// instead of a wait.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 200 * time.Millisecond})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is open in another fairsched serve", ErrLocked, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	b := &Bolt{db: db, path: path}
	if err := b.init(); err != nil {
		db.Close()
		return nil, err
	}
	return b, nil
}

// init creates the buckets and checks (or writes) the schema version.
func (b *Bolt) init() error {
	return b.db.Update(func(tx *bolt.Tx) error {
		for _, name := range Buckets {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return fmt.Errorf("store: creating bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket([]byte(Meta))
		v := meta.Get([]byte("schema"))
		if v == nil {
			return meta.Put([]byte("schema"), []byte(strconv.Itoa(SchemaVersion)))
		}
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return fmt.Errorf("store: %s: schema version %q is not a number", b.path, v)
		}
		if n > SchemaVersion {
			return fmt.Errorf("%w: %s has schema %d, this binary knows up to %d: run a newer fairsched",
				ErrNewerSchema, b.path, n, SchemaVersion)
		}
		return nil
	})
}

// Apply writes ws in one transaction, synced before it returns.
func (b *Bolt) Apply(ws []Write) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		for _, w := range ws {
			bk := tx.Bucket([]byte(w.Bucket))
			if bk == nil {
				return fmt.Errorf("store: no bucket %q", w.Bucket)
			}
			var err error
			if w.Value == nil {
				err = bk.Delete([]byte(w.Key))
			} else {
				err = bk.Put([]byte(w.Key), w.Value)
			}
			if err != nil {
				return fmt.Errorf("store: %s/%s: %w", w.Bucket, w.Key, err)
			}
		}
		return nil
	})
}

// Scan calls fn for each key of bucket in key order.
func (b *Bolt) Scan(bucket string, fn func(key string, value []byte) error) error {
	return b.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucket))
		if bk == nil {
			return fmt.Errorf("store: no bucket %q", bucket)
		}
		return bk.ForEach(func(k, v []byte) error { return fn(string(k), v) })
	})
}

// Get returns a copy of key's value.
func (b *Bolt) Get(bucket, key string) ([]byte, bool, error) {
	var out []byte
	var ok bool
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucket))
		if bk == nil {
			return fmt.Errorf("store: no bucket %q", bucket)
		}
		if v := bk.Get([]byte(key)); v != nil {
			out, ok = append([]byte(nil), v...), true
		}
		return nil
	})
	return out, ok, err
}

// Describe is ("bbolt", the file's path).
func (b *Bolt) Describe() (kind, location string) { return "bbolt", b.path }

// Close closes the file and releases its lock.
func (b *Bolt) Close() error { return b.db.Close() }

// WriteTo writes a consistent copy of the whole file to w (a backup of a
// running server: one read transaction, writers go on).
func (b *Bolt) WriteTo(w io.Writer) (int64, error) {
	var n int64
	err := b.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}
