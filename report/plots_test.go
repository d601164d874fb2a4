package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"codeberg.org/go-fonts/liberation/liberationsansbold"
	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"codeberg.org/go-fonts/liberation/liberationserifbold"
	"codeberg.org/go-fonts/liberation/liberationserifregular"
	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/internal/require"
)

// plotSets are the inputs whose plots the rendering tests draw: every
// fixture directory, and the published campaign (docs/published.json's
// files, relative to the repository's root).
func plotSets(t *testing.T) map[string][]string {
	t.Helper()
	sets := map[string][]string{"testdata": {"testdata"}}
	for _, d := range []string{"explain", "poll", "pull", "soak", "startarms"} {
		sets[d] = []string{filepath.Join("testdata", d)}
	}
	b, err := os.ReadFile(filepath.Join("..", "docs", "published.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Files []string }
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("docs/published.json: %v", err)
	}
	for _, f := range m.Files {
		sets["published"] = append(sets["published"], filepath.Join("..", f))
	}
	return sets
}

// fallbackFonts are the faces a Debian reader without the Liberation
// fonts gets for them (fontconfig's match for "Liberation Serif" there):
// DejaVu, wider than Liberation.
var fallbackFonts = []struct{ family, weight, file string }{
	{"Liberation Serif", "normal", "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"},
	{"Liberation Serif", "bold", "/usr/share/fonts/truetype/dejavu/DejaVuSerif-Bold.ttf"},
	{"Liberation Sans", "normal", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"},
	{"Liberation Sans", "bold", "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"},
}

// TestPlotsFitCanvas draws every plot of every fixture and of the
// published campaign, lays each SVG out in headless Chromium and fails for
// each <text> whose box (its glyphs' advance and the font's ascent and
// descent, after every transform) reaches outside the canvas. It does so
// twice: with the fonts gonum/plot measured its text with (Liberation,
// embedded in the page: the SVGs name the family but do not carry it),
// and with DejaVu in their place, the wider face a reader without
// Liberation gets on Debian (as rsvg-convert does here). Chromium rather
// than rsvg-convert: a browser gives each element's box, rsvg-convert
// only pixels.
func TestPlotsFitCanvas(t *testing.T) {
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		require.Skipf(t, require.Chromium, "no chromium on $PATH to lay out the plots: %v", err)
	}
	liberation := []fontFace{
		{"Liberation Serif", "normal", liberationserifregular.TTF},
		{"Liberation Serif", "bold", liberationserifbold.TTF},
		{"Liberation Sans", "normal", liberationsansregular.TTF},
		{"Liberation Sans", "bold", liberationsansbold.TTF},
	}
	var dejavu []fontFace
	for _, f := range fallbackFonts {
		b, err := os.ReadFile(f.file)
		if err != nil {
			// Chromium's Debian package pulls in fonts-dejavu-core.
			require.Skipf(t, require.Chromium, "no DejaVu font to stand in for a reader's fallback: %v", err)
		}
		dejavu = append(dejavu, fontFace{f.family, f.weight, b})
	}
	sets := plotSets(t)
	for _, fonts := range []struct {
		name  string
		faces []fontFace
	}{{"liberation", liberation}, {"dejavu", dejavu}} {
		for name, paths := range sets {
			t.Run(fonts.name+"/"+name, func(t *testing.T) {
				r := load(t, paths...)
				dir := t.TempDir()
				plots, err := r.Plots(dir)
				if err != nil {
					t.Fatalf("Plots() = %v", err)
				}
				var files []string
				for _, p := range plots {
					files = append(files, filepath.Join(dir, p.File))
				}
				res, err := layOut(t, chrome, files, fonts.faces)
				if err != nil {
					t.Fatal(err)
				}
				if res.Texts == 0 {
					t.Fatalf("%d plots laid out with no text in them", len(files))
				}
				for _, o := range res.Outside {
					t.Errorf("%s: text %q spans x %.1f–%.1f, y %.1f–%.1f: outside its %.1f×%.1f canvas",
						o.File, o.Text, o.X0, o.X1, o.Y0, o.Y1, o.W, o.H)
				}
			})
		}
	}
}

// fontFace is a font the layout page declares for a family and weight.
type fontFace struct {
	family, weight string
	ttf            []byte
}

// TestPlotsRender renders every plot of every fixture and of the published
// campaign to PNG with rsvg-convert, which fails on an SVG it cannot draw.
func TestPlotsRender(t *testing.T) {
	rsvg, err := exec.LookPath("rsvg-convert")
	if err != nil {
		require.Skipf(t, require.RSVG, "no rsvg-convert on $PATH to render the plots: %v", err)
	}
	for name, paths := range plotSets(t) {
		t.Run(name, func(t *testing.T) {
			r := load(t, paths...)
			dir := t.TempDir()
			plots, err := r.Plots(dir)
			if err != nil {
				t.Fatalf("Plots() = %v", err)
			}
			for _, p := range plots {
				in := filepath.Join(dir, p.File)
				out, err := exec.Command(rsvg, "-w", "600", "-o", in+".png", in).CombinedOutput()
				if err != nil {
					t.Errorf("rsvg-convert %s: %v\n%s", p.File, err, out)
					continue
				}
				if fi, err := os.Stat(in + ".png"); err != nil || fi.Size() < 1000 {
					t.Errorf("rsvg-convert %s: no image (%v)", p.File, err)
				}
			}
		})
	}
}

// layout is what the page's script found: how many <text> elements it
// measured, whether the fonts loaded, and the texts outside their canvas.
type layout struct {
	Fonts   bool `json:"fonts"`
	Texts   int  `json:"texts"`
	Outside []struct {
		File           string `json:"file"`
		Text           string `json:"text"`
		X0, X1, Y0, Y1 float64
		W, H           float64
	} `json:"outside"`
}

// layoutScript measures, once the fonts are loaded, each <text> of each
// figure's <svg> against the <svg>'s own box (CSS px, 0.5 px of slack for
// rounding) and writes the result as JSON into #out.
const layoutScript = `
(async () => {
  await document.fonts.ready;
  const res = {fonts: document.fonts.check("12px 'Liberation Serif'"), texts: 0, outside: []};
  const tol = 0.5;
  for (const fig of document.querySelectorAll("figure")) {
    const svg = fig.querySelector("svg");
    const c = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll("text")) {
      res.texts++;
      const b = t.getBoundingClientRect();
      if (b.left < c.left - tol || b.right > c.right + tol || b.top < c.top - tol || b.bottom > c.bottom + tol) {
        res.outside.push({file: fig.dataset.file, text: t.textContent,
          X0: b.left - c.left, X1: b.right - c.left, Y0: b.top - c.top, Y1: b.bottom - c.top, W: c.width, H: c.height});
      }
    }
  }
  document.getElementById("out").textContent = JSON.stringify(res);
})();
`

// layOut inlines the SVG files in one HTML page that declares fonts, opens
// it in headless Chromium and returns what layoutScript found.
func layOut(t *testing.T, chrome string, files []string, fonts []fontFace) (*layout, error) {
	t.Helper()
	var page bytes.Buffer
	page.WriteString("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>\n")
	for _, f := range fonts {
		fmt.Fprintf(&page, "@font-face{font-family:'%s';font-weight:%s;src:url(data:font/ttf;base64,%s)}\n",
			f.family, f.weight, base64.StdEncoding.EncodeToString(f.ttf))
	}
	page.WriteString("body{margin:0} figure{margin:0 0 20px 0;display:block}</style></head><body>\n")
	prolog := regexp.MustCompile(`(?s)^<\?xml.*?\?>|<!--.*?-->`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&page, "<figure data-file=\"%s\">%s</figure>\n", html.EscapeString(filepath.Base(f)), prolog.ReplaceAll(b, nil))
	}
	page.WriteString("<pre id=\"out\"></pre><script>" + layoutScript + "</script></body></html>\n")
	dir := t.TempDir()
	in := filepath.Join(dir, "plots.html")
	if err := os.WriteFile(in, page.Bytes(), 0o644); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--virtual-time-budget=10000", "--dump-dom", "file://"+in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("chromium --dump-dom: %v\n%s", err, tail(stderr.String(), 2000))
	}
	m := regexp.MustCompile(`(?s)<pre id="out">(.*?)</pre>`).FindSubmatch(out)
	if m == nil || len(m[1]) == 0 {
		return nil, fmt.Errorf("chromium wrote no layout (the page's script did not finish)\n%s", tail(stderr.String(), 2000))
	}
	var res layout
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &res); err != nil {
		return nil, fmt.Errorf("layout %s: %v", m[1], err)
	}
	if !res.Fonts {
		return nil, fmt.Errorf("chromium did not load the page's fonts, so its text boxes are not theirs")
	}
	return &res, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}

// TestPruneStale writes the fixtures' plots beside files an earlier report
// left and a file that is not an image, and checks that PruneStale removes
// only the stale images.
func TestPruneStale(t *testing.T) {
	r := load(t, "testdata")
	dir := t.TempDir()
	for _, f := range []string{"old_cdf.svg", "old_cdf.png", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plots, err := r.Plots(dir)
	if err != nil {
		t.Fatalf("Plots() = %v", err)
	}
	if err := PruneStale(dir, plots); err != nil {
		t.Fatalf("PruneStale() = %v", err)
	}
	want := map[string]bool{"notes.txt": true}
	for _, p := range plots {
		want[p.File] = true
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, de := range des {
		got[de.Name()] = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files after PruneStale (-want +got):\n%s", diff)
	}
	if err := PruneStale(filepath.Join(dir, "missing"), nil); err != nil {
		t.Errorf("PruneStale(missing dir) = %v, want nil", err)
	}
}

// TestScaleGroups: bars within wfDwarf of the longest share its axis; a bar
// the longest dwarfs leads a group of its own.
func TestScaleGroups(t *testing.T) {
	tests := []struct {
		name   string
		totals []float64
		want   []float64
	}{
		{"explain", []float64{11.2, 10.2, 126}, []float64{11.2, 11.2, 126}},
		{"similar", []float64{807, 805, 1097}, []float64{1097, 1097, 1097}},
		{"three scales", []float64{1, 100, 10, 3}, []float64{1, 100, 10, 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := scaleGroups(tt.totals); !cmp.Equal(got, tt.want) {
				t.Errorf("scaleGroups(%v) = %v, want %v", tt.totals, got, tt.want)
			}
		})
	}
}

// TestPlotsKinds: the published campaign's plots lead with a forest per
// campaign with comparisons, and its explain and Knative campaigns each
// get a waterfall.
func TestPlotsKinds(t *testing.T) {
	r := load(t, plotSets(t)["published"]...)
	plots, err := r.Plots(t.TempDir())
	if err != nil {
		t.Fatalf("Plots() = %v", err)
	}
	kinds := map[string][]string{}
	for _, p := range plots {
		kinds[p.Campaign] = append(kinds[p.Campaign], p.Kind)
	}
	for _, c := range []struct{ label, first, has string }{
		{"20261201-112156_coldstart", "forest", "coldstart"},
		{"20261201-112312_density", "forest", "density"},
		{"20261201-114816_explain", "waterfall", "waterfall"},
		{"20261201-114904_coldstart-knative", "forest", "waterfall"},
	} {
		ks := kinds[c.label]
		if len(ks) == 0 || ks[0] != c.first || !strings.Contains(strings.Join(ks, " "), c.has) {
			t.Errorf("%s's plots are %v, want %s first and a %s", c.label, ks, c.first, c.has)
		}
	}
}
