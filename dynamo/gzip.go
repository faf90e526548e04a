package dynamo

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"sync"
)

// The gzip of stored bodies and results (and the queue's message bodies):
// pooled writers at BestSpeed, since a new gzip.Writer allocates about
// 1 MB, and reads bounded by the caller.
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

// Shrink returns b gzipped and true when b has from bytes or more and shrinks; else b, false.
func Shrink(b []byte, from int) ([]byte, bool) {
	if len(b) >= from {
		if z := Compress(b); len(z) < len(b) {
			return z, true
		}
	}
	return b, false
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
