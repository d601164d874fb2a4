package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/coldstart-go/coldstart/internal/require"
)

// browser is headless Chromium driven over the DevTools protocol, with
// what the page reported: console messages and exceptions of level error,
// and every URL it requested.
type browser struct {
	ctx context.Context

	mu       sync.Mutex
	errors   []string
	requests []string
}

// newBrowser starts Debian's chromium for the test, in a new profile,
// with everything that would reach out on its own (updates, sync, QUIC)
// off: the machine has no network and the page must need none. It is
// stopped when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		require.Skipf(t, require.Chromium, "chromium not installed (scripts/test-setup.sh installs Debian's): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // the tests run as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 2400),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancel() }) // before the TempDir goes
	b := &browser{ctx: bctx}
	// chromedp enables the runtime, log and network domains of the tab,
	// whose events these are.
	err = chromedp.Listen(bctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.errors = append(b.errors, "console."+string(ev.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			b.errors = append(b.errors, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			// Failed loads, CSP violations and the like come here.
			if ev.Entry.Level == log.EntryLevelError {
				b.errors = append(b.errors, fmt.Sprintf("%s: %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, ev.Request.URL)
		}
	})
	if err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	return b
}

// open loads file (an absolute path) and evaluates expr on the loaded
// page.
func open[T any](t *testing.T, b *browser, file, expr string) T {
	t.Helper()
	var res T
	err := chromedp.Do(b.ctx, chromedp.Navigate("file://"+file))
	if err == nil {
		res, err = chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	}
	if err != nil {
		t.Fatalf("open %s in chromium: %v", file, err)
	}
	return res
}

// seen returns the errors and requests reported so far and forgets them.
func (b *browser) seen() (errs, reqs []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	errs, reqs = b.errors, b.requests
	b.errors, b.requests = nil, nil
	return errs, reqs
}

// pageFacts is what TestHTMLInBrowser reads from the rendered page.
type pageFacts struct {
	Title string `json:"title"`
	// H2 are the level-2 headings' ids, in order.
	H2 []string `json:"h2"`
	// Decision is the text of the Decision section as displayed, and
	// DecisionHeight the height it takes on the page (CSS px).
	Decision       string  `json:"decision"`
	DecisionHeight float64 `json:"decisionHeight"`
	Plots          []struct {
		Label string `json:"label"`
		// SVG is whether the figure holds an element in the SVG
		// namespace; W, H its box on the page and BW, BH the box of
		// what it drew (CSS px).
		SVG   bool    `json:"svg"`
		W     float64 `json:"w"`
		H     float64 `json:"h"`
		BW    float64 `json:"bw"`
		BH    float64 `json:"bh"`
		Drawn int     `json:"drawn"`
	} `json:"plots"`
}

const pageFactsJS = `(() => {
  const h2 = [...document.querySelectorAll('h2')];
  let decision = '', decisionHeight = 0;
  const d = document.getElementById('decision');
  if (d) {
    const section = [d];
    for (let n = d.nextElementSibling; n && n.tagName !== 'H2'; n = n.nextElementSibling) section.push(n);
    const r = document.createRange();
    r.setStartBefore(d);
    r.setEndAfter(section[section.length - 1]);
    decision = section.map(e => e.innerText).join('\n');
    decisionHeight = r.getBoundingClientRect().height;
  }
  const plots = [...document.querySelectorAll('figure.plot')].map(f => {
    const s = f.querySelector('svg');
    if (!s) return {label: f.getAttribute('aria-label'), svg: false};
    const r = s.getBoundingClientRect(), bb = s.getBBox();
    return {label: f.getAttribute('aria-label'), svg: s.namespaceURI === 'http://www.w3.org/2000/svg',
      w: r.width, h: r.height, bw: bb.width, bh: bb.height,
      drawn: s.querySelectorAll('path, text, line, polyline, rect, circle').length};
  });
  return {title: document.title, h2: h2.map(h => h.id), decision, decisionHeight, plots};
})()`

// TestHTMLInBrowser opens the HTML report of the fixtures in headless
// Chromium and checks what a reader would see: the Decision section first
// and showing the Markdown's decision, every plot the report drew rendered
// as SVG with something in it, no console error, and no request but the
// file itself (and the data: URLs of its fonts). A control page with a broken image checks that errors and
// requests are indeed seen.
func TestHTMLInBrowser(t *testing.T) {
	b := newBrowser(t)
	r := load(t, "testdata")
	plots, err := r.Plots(t.TempDir())
	if err != nil {
		t.Fatalf("Plots() = %v", err)
	}
	var md bytes.Buffer
	if err := r.Markdown(&md, MarkdownOptions{Title: "Browser"}); err != nil {
		t.Fatalf("Markdown() = %v", err)
	}
	wantDecision := decisionText(t, md.Bytes())

	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	var page bytes.Buffer
	if err := r.HTML(&page, HTMLOptions{Title: "Browser"}); err != nil {
		t.Fatalf("HTML() = %v", err)
	}
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got := open[pageFacts](t, b, file, pageFactsJS)
	errs, reqs := b.seen()

	if got.Title != "Browser" {
		t.Errorf("document.title = %q, want %q", got.Title, "Browser")
	}
	if len(got.H2) == 0 || got.H2[0] != "decision" {
		t.Errorf("level-2 headings %q, want the Decision (id decision) first", got.H2)
	}
	if norm(got.Decision) == "" || got.DecisionHeight <= 0 {
		t.Errorf("Decision section shows %q in %.0f px, want its text on the page", got.Decision, got.DecisionHeight)
	}
	if !strings.Contains(norm(got.Decision), norm(wantDecision)) {
		t.Errorf("Decision section shows\n%q\nwant it to hold the Markdown's decision\n%q", norm(got.Decision), norm(wantDecision))
	}
	var want, shown []string
	for _, p := range plots {
		want = append(want, p.Title)
	}
	for _, p := range got.Plots {
		shown = append(shown, p.Label)
	}
	slices.Sort(want)
	slices.Sort(shown)
	if diff := cmp.Diff(want, shown); diff != "" {
		t.Errorf("plots on the page differ from those the report drew (-drawn +shown):\n%s", diff)
	}
	for _, p := range got.Plots {
		if !p.SVG || p.W <= 0 || p.H <= 0 || p.BW <= 0 || p.BH <= 0 || p.Drawn < 10 {
			t.Errorf("plot %q not rendered: svg=%v box %.0f×%.0f, drawing %.0f×%.0f with %d shapes", p.Label, p.SVG, p.W, p.H, p.BW, p.BH, p.Drawn)
		}
	}
	if len(errs) > 0 {
		t.Errorf("console errors opening the report:\n%s", strings.Join(errs, "\n"))
	}
	for _, u := range reqs {
		if u != "file://"+file && !strings.HasPrefix(u, "data:") {
			t.Errorf("the report requested %s, want nothing but itself", u)
		}
	}

	// The control: the same listeners see a failed load.
	control := filepath.Join(dir, "control.html")
	if err := os.WriteFile(control, []byte(`<!DOCTYPE html><title>control</title><img src="missing.png">`), 0o644); err != nil {
		t.Fatal(err)
	}
	open[string](t, b, control, `document.title`)
	if errs, reqs := b.seen(); len(errs) == 0 || len(reqs) < 2 {
		t.Errorf("control page with a missing image: errors %q, requests %q; want the failed load seen", errs, reqs)
	}
}

// decisionText is the plain text of the first paragraph of the Markdown's
// "## Decision" section.
func decisionText(t *testing.T, md []byte) string {
	t.Helper()
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM, extension.Footnote)).Parser().Parse(text.NewReader(md))
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok || h.Level != 2 || plainText(h, md) != "Decision" {
			continue
		}
		for p := h.NextSibling(); p != nil; p = p.NextSibling() {
			if _, ok := p.(*ast.Heading); ok {
				break
			}
			if tx := plainText(p, md); strings.TrimSpace(tx) != "" {
				return tx
			}
		}
	}
	t.Fatalf("the Markdown report has no text under a \"## Decision\" heading:\n%s", md)
	return ""
}

// norm collapses runs of white space to one space.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }
