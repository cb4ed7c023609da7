package loadgen

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"sync"
)

// Compression values of --compression.
const (
	CompressionNone = "none"
	CompressionGzip = "gzip"
)

// Gzip reports whether the run compresses its requests and accepts compressed replies.
func (c *Config) Gzip() bool { return c.Compression == CompressionGzip }

// checkCompression refuses an unknown --compression, and gzip where the driver sends nothing
// compressed (DriverInfo.Gzip).
func checkCompression(compression string, d Driver, scheme string) error {
	switch {
	case compression != CompressionNone && compression != CompressionGzip:
		return fmt.Errorf("--compression must be %s or %s, got %q", CompressionNone, CompressionGzip, compression)
	case compression == CompressionGzip && !d.Info().Gzip:
		return fmt.Errorf("--compression gzip applies to %s targets only; %s:// sends nothing compressed", schemeURLs(GzipSchemes()), scheme)
	}
	return nil
}

// GzipOnce compresses a request body at gzip's default level. Drivers call it once per run, as
// every call sends the same bytes: the server inflates each one, and the client's own cost
// stays out of the measurement.
func GzipOnce(body []byte) ([]byte, error) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Inflater inflates one compressed reply; reused through a pool, so a gzip run allocates per
// reply only what gzip itself does.
type Inflater struct {
	src bytes.Reader
	zr  gzip.Reader
	out bytes.Buffer
}

var inflaters = sync.Pool{New: func() any { return new(Inflater) }}

// Inflate returns body inflated, held by an Inflater to Release once the bytes are judged.
func Inflate(body []byte) ([]byte, *Inflater, error) {
	f := inflaters.Get().(*Inflater)
	f.src.Reset(body)
	f.out.Reset()
	err := f.zr.Reset(&f.src)
	if err == nil {
		_, err = f.out.ReadFrom(&f.zr)
	}
	if err != nil {
		f.Release()
		return nil, nil, err
	}
	return f.out.Bytes(), f, nil
}

// Release gives the Inflater back; the bytes Inflate returned are not to be used after it.
func (f *Inflater) Release() { inflaters.Put(f) }
