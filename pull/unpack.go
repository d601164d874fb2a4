package pull

import (
	"context"
	"io"

	"github.com/coldstart-go/coldstart/internal/unpack"
)

// unpackLayer writes one uncompressed layer's tar stream into dir and
// returns the file bytes written: the one place pull untars, through the
// shared safe unpacker (entries stay inside dir, also through the layer's
// own symlinks; whiteouts applied; a size cap).
func unpackLayer(ctx context.Context, r io.Reader, dir string) (int64, error) {
	st, err := unpack.Layer(ctx, dir, r, unpack.Options{})
	return st.Bytes, err
}
