// Package zip is the gzip both the ledger (payload items) and the queue
// (message bodies) use: pooled writers at BestSpeed, since a new gzip.Writer
// allocates about 1 MB, and bounded reads.
package zip

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"sync"
)

var writers = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// Compress returns b gzip-compressed.
func Compress(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/3 + 64)
	zw := writers.Get().(*gzip.Writer)
	zw.Reset(&buf)
	zw.Write(b)
	zw.Close()
	writers.Put(zw)
	return buf.Bytes()
}

// Decompress reverses Compress, refusing output past limit bytes.
func Decompress(z []byte, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("decompresses past %d bytes", limit)
	}
	return b, nil
}
