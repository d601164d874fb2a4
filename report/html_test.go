package report

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestHTMLSelfContained renders the fixtures' report, with notes that try
// to bring in a script, a remote image and a link, and checks that the
// page needs nothing outside itself: no element that loads, no URL in any
// attribute but in-page anchors, a policy forbidding loads, every plot
// drawn inline and every section of the Markdown there.
func TestHTMLSelfContained(t *testing.T) {
	r := load(t, "testdata")
	plots, err := r.Plots(t.TempDir())
	if err != nil {
		t.Fatalf("Plots() = %v", err)
	}
	notes := "Seen on [the dashboard](https://dash.example/x), see also http://zipkin.example:9411/api.\n\n" +
		"<script>alert(1)</script>\n\n![remote](https://img.example/p.png)\n\n<img src=\"http://img.example/q.png\">\n"
	var md, b bytes.Buffer
	if err := r.Markdown(&md, MarkdownOptions{Title: "T", Notes: notes}); err != nil {
		t.Fatalf("Markdown() = %v", err)
	}
	if err := r.HTML(&b, HTMLOptions{Title: "Self <contained>", Notes: notes}); err != nil {
		t.Fatalf("HTML() = %v", err)
	}
	doc, err := html.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("parse the HTML: %v", err)
	}

	var title, csp string
	var h2, figures, svgs int
	var visit func(*html.Node, bool)
	visit = func(n *html.Node, inFigure bool) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "link", "iframe", "frame", "object", "embed", "img", "image", "base", "video", "audio", "source", "track", "use", "form":
				if n.Data != "image" || !strings.HasPrefix(attr(n, "href"), "data:") {
					t.Errorf("page has a <%s> element, which loads or runs something: %s", n.Data, render(n))
				}
			case "title":
				if n.FirstChild != nil && n.Parent.Data == "head" {
					title = n.FirstChild.Data
				}
			case "meta":
				if attr(n, "http-equiv") == "Content-Security-Policy" {
					csp = attr(n, "content")
				}
			case "h2":
				h2++
			case "figure":
				figures++
				inFigure = true
			case "svg":
				if inFigure {
					svgs++
				}
			case "style":
				css := textOf(n)
				if rest := strings.NewReplacer("url(#", "", "url(data:", "").Replace(css); strings.Contains(rest, "url(") || strings.Contains(rest, "@import") {
					t.Errorf("style sheet loads something:\n%.2000s", css)
				}
				if !strings.Contains(css, `@font-face { font-family: "Liberation Serif"; font-weight: normal; font-style: normal; src: url(data:font/ttf;base64,`) {
					t.Errorf("style sheet does not carry the plots' font, Liberation Serif")
				}
			}
			for _, a := range n.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				switch strings.ToLower(a.Key) {
				case "src", "href", "xlink:href", "action", "formaction", "srcset", "poster", "data", "background", "ping":
					if !strings.HasPrefix(v, "#") {
						t.Errorf("<%s %s=%q>: a URL outside the page", n.Data, a.Key, a.Val)
					}
				}
				if strings.Contains(v, "http://") || strings.Contains(v, "https://") || strings.HasPrefix(v, "//") {
					t.Errorf("<%s %s=%q>: a URL in an attribute", n.Data, a.Key, a.Val)
				}
				if strings.HasPrefix(strings.ToLower(a.Key), "on") {
					t.Errorf("<%s %s=%q>: an event handler", n.Data, a.Key, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c, inFigure)
		}
	}
	visit(doc, false)

	if title != "Self <contained>" {
		t.Errorf("<title> = %q, want %q", title, "Self <contained>")
	}
	if want := "default-src 'none'"; !strings.Contains(csp, want) {
		t.Errorf("Content-Security-Policy = %q, want it to hold %q", csp, want)
	}
	if len(plots) == 0 || figures != len(plots) || svgs != len(plots) {
		t.Errorf("page has %d plot figures holding %d <svg>, want %d of each (the plots the report draws)", figures, svgs, len(plots))
	}
	if want := strings.Count("\n"+md.String(), "\n## "); h2 != want {
		t.Errorf("page has %d <h2>, want the Markdown's %d sections", h2, want)
	}
	for _, want := range []string{
		`the dashboard (<span class="url">https://dash.example/x</span>)`,
		`<span class="url">http://zipkin.example:9411/api</span>`,
		`[image: remote, <span class="url">https://img.example/p.png</span>]`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %s", want)
		}
	}

	var none bytes.Buffer
	if err := r.HTML(&none, HTMLOptions{NoPlots: true}); err != nil {
		t.Fatalf("HTML(NoPlots) = %v", err)
	}
	if strings.Contains(none.String(), "<svg") || strings.Contains(none.String(), htmlPlotsRel) {
		t.Errorf("HTML(NoPlots) has plots or links to them")
	}
	if !strings.Contains(none.String(), "<title>coldstart report</title>") {
		t.Errorf("HTML with no title: want the default, <title>coldstart report</title>")
	}
}

// TestMarkdownToHTML checks the conversions the page makes to goldmark's
// HTML: the Decision section moved first, links out of the page shown as
// text, in-page links (footnotes) kept, plots inlined in a figure.
func TestMarkdownToHTML(t *testing.T) {
	plot := inlinePlot{Plot: Plot{File: "c_cdf.svg", Title: "the CDF"}, svg: `<svg viewBox="0 0 1 1"><path d="M0,0L1,1"/></svg>`}
	inline := map[string]inlinePlot{htmlPlotsRel + "/c_cdf.svg": plot}
	tests := []struct {
		name, md string
		// want are substrings of the output, in this order.
		want []string
		// not are substrings the output must not hold.
		not []string
	}{
		{name: "decision moved first",
			md:   "# T\n\nIntro.\n\n## Notes\n\nN.\n\n| a |\n|---|\n| 1 |\n\n## Recommendations\n\n- r\n\n## Decision\n\nShip **static**.\n\n| ship |\n|---|\n| static |\n\n### Why\n\nW.\n\n## Builds\n\nB.\n",
			want: []string{"<h1", "Intro.", `<h2 id="decision">Decision</h2>`, "<strong>static</strong>", `<table class="decision">`, `<h3 id="why">`, `<h2 id="notes">`, "<table>", `<h2 id="recommendations">`, `<h2 id="builds">`}},
		{name: "decision already first",
			md:   "# T\n\n## Decision\n\nD.\n\n## Recommendations\n\nR.\n",
			want: []string{`<h2 id="decision">`, "D.", `<h2 id="recommendations">`, "R."}},
		{name: "plot inlined",
			md:   "Before.\n\n![the CDF](" + htmlPlotsRel + "/c_cdf.svg)\n\nAfter.\n",
			want: []string{"Before.", `<figure class="plot" id="plot-c_cdf" role="img" aria-label="the CDF">`, plot.svg, "</figure>", "After."},
			not:  []string{"<p><figure", "<img"}},
		{name: "plot within text",
			md:   "See ![the CDF](" + htmlPlotsRel + "/c_cdf.svg) here.\n",
			want: []string{`<p>See <span class="plot">` + plot.svg + `</span> here.</p>`}},
		{name: "other image",
			md:   "![a plot](plots/x.svg)\n",
			want: []string{`[image: a plot, <span class="url">plots/x.svg</span>]`},
			not:  []string{"<img"}},
		{name: "links",
			md:   "[go](https://go.dev), <https://pkg.go.dev>, https://x.example/a and [here](#builds); [docs](docs/a.md).\n",
			want: []string{`go (<span class="url">https://go.dev</span>)`, `<span class="url">https://pkg.go.dev</span>`, `<span class="url">https://x.example/a</span>`, `<a href="#builds">here</a>`, `docs (<span class="url">docs/a.md</span>)`},
			not:  []string{`href="http`, `href="docs`}},
		{name: "footnote",
			md:   "A claim.[^1]\n\n[^1]: Its source.\n",
			want: []string{`href="#fn:1"`, `id="fn:1"`, "Its source."}},
		{name: "table",
			md:   "| arm | ms |\n|---|---:|\n| default | 7.2 |\n",
			want: []string{"<table>", "<th>arm</th>", "7.2", "</table>"}},
		{name: "raw HTML left out",
			md:  "<script>alert(1)</script>\n\nText <b onclick=\"x()\">bold</b>.\n",
			not: []string{"<script", "onclick"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := markdownToHTML([]byte(tt.md), inline)
			if err != nil {
				t.Fatalf("markdownToHTML(%q) = %v", tt.md, err)
			}
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("markdownToHTML(%q) lacks %q after what came before, in:\n%s", tt.md, w, got)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("markdownToHTML(%q) holds %q:\n%s", tt.md, n, got)
				}
			}
		})
	}
}

func TestInlineSVG(t *testing.T) {
	tests := []struct {
		name, in, want, wantErr string
	}{
		{name: "prolog and namespaces dropped",
			in:   "<?xml version=\"1.0\"?>\n<!-- Generated by SVGo -->\n<svg width=\"10pt\" viewBox=\"0 0 10 10\"\n\txmlns=\"http://www.w3.org/2000/svg\"\n\txmlns:xlink=\"http://www.w3.org/1999/xlink\">\n<path d=\"M0,0\"/>\n</svg>\n",
			want: "<svg width=\"10pt\" viewBox=\"0 0 10 10\">\n<path d=\"M0,0\"/>\n</svg>"},
		{name: "ids prefixed",
			in:   `<svg><clipPath id="c1"><rect/></clipPath><g clip-path="url(#c1)"><use xlink:href="#c1"/><use href="#other"/></g></svg>`,
			want: `<svg><clipPath id="p3-c1"><rect/></clipPath><g clip-path="url(#p3-c1)"><use xlink:href="#p3-c1"/><use href="#other"/></g></svg>`},
		{name: "not svg", in: "<html></html>", wantErr: "no <svg> element"},
		{name: "not closed", in: "<svg><path/>", wantErr: "no </svg>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := inlineSVG([]byte(tt.in), "p3-")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("inlineSVG(%q) = %q, %v; want an error holding %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("inlineSVG(%q) = %q, %v\nwant %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key || a.Namespace+":"+a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

func render(n *html.Node) string {
	var b strings.Builder
	_ = html.Render(&b, n)
	if len(b.String()) > 200 {
		return b.String()[:200] + "…"
	}
	return b.String()
}
