package pull

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/coldstart-go/coldstart/record"
)

// layerFiles reads each file of l as name -> content.
func layerFiles(t *testing.T, l v1.Layer) map[string]string {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = string(b)
	}
}

func digests(t *testing.T, img v1.Image) (layers, diffIDs []string) {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		di, err := l.DiffID()
		if err != nil {
			t.Fatal(err)
		}
		layers, diffIDs = append(layers, d.String()), append(diffIDs, di.String())
	}
	return layers, diffIDs
}

// TestSalt: a salted image shares no layer (by digest or diff ID) with
// the original or another salt, keeps every file, compression and the
// config, adds the salt file, and pushes to the registry and reads back.
func TestSalt(t *testing.T) {
	// A small binary: the test reads every layer.
	self, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []record.PullVariant{
		{Arm: "x", Compression: record.Gzip, Layering: record.SplitLayers},
		{Arm: "x", Compression: record.Zstd, Layering: record.SingleLayer},
	} {
		t.Run(string(v.Compression)+"-"+string(v.Layering), func(t *testing.T) {
			img, err := BuildVariant(Binary{Arm: "x", Path: self}, v, 1)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Salt(img, "round 1")
			if err != nil {
				t.Fatal(err)
			}
			b, err := Salt(img, "round 2")
			if err != nil {
				t.Fatal(err)
			}
			a2, err := Salt(img, "round 1")
			if err != nil {
				t.Fatal(err)
			}
			ol, od := digests(t, img)
			al, ad := digests(t, a)
			bl, bd := digests(t, b)
			a2l, _ := digests(t, a2)
			if len(al) != len(ol) {
				t.Fatalf("salted image has %d layers, want %d", len(al), len(ol))
			}
			for i := range ol {
				for _, other := range [][]string{ol, bl} {
					if al[i] == other[i] {
						t.Errorf("layer %d: digest %s shared across salts", i, al[i])
					}
				}
				for _, other := range [][]string{od, bd} {
					if ad[i] == other[i] {
						t.Errorf("layer %d: diff ID %s shared across salts", i, ad[i])
					}
				}
			}
			if !slices.Equal(al, a2l) {
				t.Errorf("the same salt twice gave layers %v and %v: want the same image", al, a2l)
			}

			cf, err := a.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			var cd []string
			for _, h := range cf.RootFS.DiffIDs {
				cd = append(cd, h.String())
			}
			if !slices.Equal(cd, ad) {
				t.Errorf("config diff_ids %v, layers' %v", cd, ad)
			}
			ocf, _ := img.ConfigFile()
			if !slices.Equal(cf.Config.Entrypoint, ocf.Config.Entrypoint) || cf.Config.User != ocf.Config.User || !slices.Equal(cf.Config.Env, ocf.Config.Env) {
				t.Errorf("config changed: %+v, want %+v", cf.Config, ocf.Config)
			}

			ols, _ := img.Layers()
			als, _ := a.Layers()
			for i := range ols {
				of, af := layerFiles(t, ols[i]), layerFiles(t, als[i])
				if af[SaltFile] != "round 1" {
					t.Errorf("layer %d: %s holds %q, want the salt", i, SaltFile, af[SaltFile])
				}
				delete(af, SaltFile)
				if len(af) != len(of) {
					t.Errorf("layer %d: %d files besides the salt, want %d", i, len(af), len(of))
				}
				for n, c := range of {
					if af[n] != c {
						t.Errorf("layer %d: %s differs after salting", i, n)
					}
				}
				omt, _ := ols[i].MediaType()
				amt, _ := als[i].MediaType()
				if omt != amt {
					t.Errorf("layer %d: media type %s, want %s", i, amt, omt)
				}
			}
			if mt, _ := a.MediaType(); mt != types.OCIManifestSchema1 {
				t.Errorf("manifest media type %s", mt)
			}

			r, err := StartRegistry(0)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ref, err := r.PushImage(context.Background(), "coldstart/x", "r1", a)
			if err != nil {
				t.Fatal(err)
			}
			size, err := ImageBytes(a)
			if err != nil {
				t.Fatal(err)
			}
			before := r.Served()
			n, err := NewNode(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			p, err := n.Pull(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if p.LayersPulled != len(al) || p.Digest.String() != ref[strings.Index(ref, "@")+1:] {
				t.Errorf("pulled %+v, want %d layers of %s", p, len(al), ref)
			}
			// A pull fetches the manifest, the config and every layer: what
			// ImageBytes counts is what the registry serves for it.
			if served := r.Served() - before; served < size {
				t.Errorf("a pull served %d bytes, ImageBytes says %d", served, size)
			}

			// Dropped, the image's blobs are gone: another node's pull fails.
			if err := r.DeleteBlobs(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			n2, err := NewNode(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer n2.Close()
			if _, err := n2.Pull(context.Background(), ref); err == nil {
				t.Error("pulled an image whose blobs were deleted")
			}
		})
	}
}
