package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"codeberg.org/go-fonts/liberation/liberationmonobold"
	"codeberg.org/go-fonts/liberation/liberationmonobolditalic"
	"codeberg.org/go-fonts/liberation/liberationmonoitalic"
	"codeberg.org/go-fonts/liberation/liberationmonoregular"
	"codeberg.org/go-fonts/liberation/liberationsansbold"
	"codeberg.org/go-fonts/liberation/liberationsansbolditalic"
	"codeberg.org/go-fonts/liberation/liberationsansitalic"
	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"codeberg.org/go-fonts/liberation/liberationserifbold"
	"codeberg.org/go-fonts/liberation/liberationserifbolditalic"
	"codeberg.org/go-fonts/liberation/liberationserifitalic"
	"codeberg.org/go-fonts/liberation/liberationserifregular"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// HTMLOptions shape the HTML document.
type HTMLOptions struct {
	// Title is the document's heading and its <title> ("" = "coldstart
	// report").
	Title string
	// Notes is Markdown written by whoever ran the campaign, placed where
	// the Markdown report places it ("" = none).
	Notes string
	// NoPlots leaves the plots out (false = draw every plot the Markdown
	// report would link and inline it as SVG).
	NoPlots bool
}

// HTML writes the Markdown report (Report.Markdown) as one self-contained
// HTML file: its plots drawn as SVG and inlined as <svg> elements where
// the Markdown links them, a small embedded style sheet carrying the fonts
// the plots were laid out in, and nothing that makes a browser fetch
// anything: a Content-Security-Policy forbids every load, links to other
// documents become their text followed by the target (only in-page
// anchors, such as footnotes, stay links), and images that are not plots
// become their alt text. The Decision section, where the Markdown has one,
// is the first section.
func (r *Report) HTML(w io.Writer, o HTMLOptions) error {
	title := o.Title
	if title == "" {
		title = "coldstart report"
	}
	mo := MarkdownOptions{Title: title, Notes: o.Notes}
	inline := map[string]inlinePlot{}
	if !o.NoPlots {
		dir, err := os.MkdirTemp("", "coldstart-html-plots-")
		if err != nil {
			return fmt.Errorf("create plots dir: %w", err)
		}
		defer os.RemoveAll(dir)
		plots, err := r.PlotsAs(dir, "svg")
		if err != nil {
			return err
		}
		// The Markdown links each plot as PlotsRel/File; the renderer
		// swaps exactly those links for the SVG read from dir.
		mo.Plots, mo.PlotsRel = plots, htmlPlotsRel
		for i, pl := range plots {
			b, err := os.ReadFile(filepath.Join(dir, pl.File))
			if err != nil {
				return fmt.Errorf("read plot %s: %w", pl.File, err)
			}
			svg, err := inlineSVG(b, fmt.Sprintf("p%d-", i+1))
			if err != nil {
				return fmt.Errorf("inline plot %s: %w", pl.File, err)
			}
			inline[path.Join(htmlPlotsRel, pl.File)] = inlinePlot{Plot: pl, svg: svg}
		}
	}
	var svgs []string
	for _, pl := range inline {
		svgs = append(svgs, pl.svg)
	}
	var md bytes.Buffer
	if err := r.Markdown(&md, mo); err != nil {
		return err
	}
	body, err := markdownToHTML(md.Bytes(), inline)
	if err != nil {
		return err
	}
	return htmlPage.Execute(w, struct {
		Title string
		CSP   string
		CSS   template.CSS
		Body  template.HTML
	}{title, htmlCSP, template.CSS(htmlCSS + fontFaces(svgs)), template.HTML(body)})
}

// htmlPlotsRel is the directory the Markdown handed to the HTML renderer
// links plots from: a name no other link in a report uses.
const htmlPlotsRel = "coldstart-inline-plot"

// htmlCSP lets the page use its own inline styles (the style sheet and
// the SVG's style attributes) and data: images and fonts, and forbids
// every other load, scripts included: a report that tried to fetch
// anything would show it as a console error rather than reach the
// network.
const htmlCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:"

var htmlPage = template.Must(template.New("html").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="coldstart report">
<title>{{.Title}}</title>
<style>{{.CSS}}</style>
</head>
<body>
<main>
{{.Body}}</main>
</body>
</html>
`))

// htmlCSS is the whole style sheet: system fonts, a readable measure for
// prose, tables that keep each row on one line and scroll sideways when
// wider than the page (but the Decision's, which wrap to fit), plots that
// shrink to fit.
const htmlCSS = `
:root { color-scheme: light; }
body { margin: 0; background: #fff; color: #1f2328;
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", sans-serif; }
main { max-width: 80rem; margin: 0 auto; padding: 1.5rem 2rem 4rem; }
h1 { font-size: 2rem; margin: 0 0 1rem; border-bottom: 1px solid #d1d9e0; padding-bottom: .3rem; }
h2 { font-size: 1.5rem; margin: 2.5rem 0 1rem; border-bottom: 1px solid #d1d9e0; padding-bottom: .3rem; }
h3 { font-size: 1.2rem; margin: 2rem 0 .75rem; }
h2#decision { border: 0; background: #ddf4ff; border-left: .3rem solid #0969da; padding: .4rem .8rem; margin-top: 1.5rem; }
p, li { max-width: 60rem; }
li + li { margin-top: .35rem; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: .875em; }
code { background: #eff1f3; border-radius: 4px; padding: .1em .3em; overflow-wrap: anywhere; }
pre { background: #f6f8fa; border-radius: 6px; padding: .8rem 1rem; overflow-x: auto; }
pre code { background: none; padding: 0; overflow-wrap: normal; }
table { display: block; max-width: 100%; overflow-x: auto; border-collapse: collapse; margin: 1rem 0; font-size: .875rem; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d1d9e0; padding: .3rem .6rem; white-space: nowrap; }
th { background: #f6f8fa; font-weight: 600; }
table.decision th, table.decision td { white-space: normal; }
tbody tr:nth-child(even) { background: #f9fafb; }
figure.plot { margin: 1.5rem 0; max-width: 40rem; }
figure.plot svg { display: block; width: 100%; height: auto; border: 1px solid #d1d9e0; border-radius: 6px; }
.url { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: .875em; overflow-wrap: anywhere; }
.footnotes { font-size: .875rem; border-top: 1px solid #d1d9e0; margin-top: 3rem; }
`

// liberationFaces are the fonts gonum/plot measures and names the plots'
// text in, by family, weight and style as the SVG's style attributes
// give them.
var liberationFaces = map[[3]string][]byte{
	{"Liberation Serif", "normal", "normal"}: liberationserifregular.TTF,
	{"Liberation Serif", "bold", "normal"}:   liberationserifbold.TTF,
	{"Liberation Serif", "normal", "italic"}: liberationserifitalic.TTF,
	{"Liberation Serif", "bold", "italic"}:   liberationserifbolditalic.TTF,
	{"Liberation Sans", "normal", "normal"}:  liberationsansregular.TTF,
	{"Liberation Sans", "bold", "normal"}:    liberationsansbold.TTF,
	{"Liberation Sans", "normal", "italic"}:  liberationsansitalic.TTF,
	{"Liberation Sans", "bold", "italic"}:    liberationsansbolditalic.TTF,
	{"Liberation Mono", "normal", "normal"}:  liberationmonoregular.TTF,
	{"Liberation Mono", "bold", "normal"}:    liberationmonobold.TTF,
	{"Liberation Mono", "normal", "italic"}:  liberationmonoitalic.TTF,
	{"Liberation Mono", "bold", "italic"}:    liberationmonobolditalic.TTF,
}

var svgStyle = regexp.MustCompile(`style="([^"]*)"`)

// fontFaces is the @font-face rules, each with the font inline as a data:
// URL, of the Liberation faces the SVGs name. The plots' text was laid out
// with these fonts' widths; where the reader's machine lacks them, a
// fallback font is wider and overruns the room left for it, so the page
// carries the faces it uses (some 400 KB each) rather than trust the
// machine's fonts.
func fontFaces(svgs []string) string {
	used := map[[3]string]bool{}
	for _, svg := range svgs {
		for _, m := range svgStyle.FindAllStringSubmatch(svg, -1) {
			face := [3]string{"", "normal", "normal"}
			for _, decl := range strings.Split(m[1], ";") {
				k, v, ok := strings.Cut(decl, ":")
				if !ok {
					continue
				}
				v = strings.TrimSpace(v)
				switch strings.TrimSpace(k) {
				case "font-family":
					first, _, _ := strings.Cut(v, ",")
					face[0] = strings.Trim(strings.TrimSpace(first), `'"`)
				case "font-weight":
					if v == "bold" || v == "700" {
						face[1] = "bold"
					}
				case "font-style":
					if v == "italic" || v == "oblique" {
						face[2] = "italic"
					}
				}
			}
			if _, ok := liberationFaces[face]; ok {
				used[face] = true
			}
		}
	}
	faces := make([][3]string, 0, len(used))
	for f := range used {
		faces = append(faces, f)
	}
	slices.SortFunc(faces, func(a, b [3]string) int { return strings.Compare(strings.Join(a[:], ","), strings.Join(b[:], ",")) })
	var b strings.Builder
	for _, f := range faces {
		fmt.Fprintf(&b, "@font-face { font-family: %q; font-weight: %s; font-style: %s; src: url(data:font/ttf;base64,%s) format(\"truetype\"); }\n",
			f[0], f[1], f[2], base64.StdEncoding.EncodeToString(liberationFaces[f]))
	}
	return b.String()
}

// inlinePlot is a plot ready to be placed in the page.
type inlinePlot struct {
	Plot
	svg string
}

var (
	svgOpen    = regexp.MustCompile(`<svg\b[^>]*>`)
	svgXMLNS   = regexp.MustCompile(`\s+xmlns(:[a-zA-Z]+)?="[^"]*"`)
	svgID      = regexp.MustCompile(`\bid="([^"]+)"`)
	svgIDRefer = regexp.MustCompile(`(url\(#|href="#)([^)"]+)`)
)

// inlineSVG turns an SVG file into an element for an HTML page: the XML
// prolog and comments before <svg> dropped, the namespace declarations
// dropped (the HTML parser puts <svg> in the SVG namespace itself, and a
// page with no URL in it cannot be taken to fetch one), and every id, with
// the references to it, prefixed so that two plots cannot clash.
func inlineSVG(b []byte, prefix string) (string, error) {
	s := string(b)
	loc := svgOpen.FindStringIndex(s)
	if loc == nil {
		return "", fmt.Errorf("no <svg> element")
	}
	end := strings.LastIndex(s, "</svg>")
	if end < loc[1] {
		return "", fmt.Errorf("no </svg> closing the <svg> element")
	}
	open := svgXMLNS.ReplaceAllString(s[loc[0]:loc[1]], "")
	s = open + s[loc[1]:end+len("</svg>")]
	ids := map[string]bool{}
	for _, m := range svgID.FindAllStringSubmatch(s, -1) {
		ids[m[1]] = true
	}
	if len(ids) > 0 {
		s = svgID.ReplaceAllString(s, `id="`+prefix+`$1"`)
		s = svgIDRefer.ReplaceAllStringFunc(s, func(m string) string {
			sm := svgIDRefer.FindStringSubmatch(m)
			if !ids[sm[2]] {
				return m
			}
			return sm[1] + prefix + sm[2]
		})
	}
	return s, nil
}

// markdownToHTML converts the report's Markdown (GitHub-flavoured tables,
// footnotes) to the HTML of the page's body, with the plots in inline put
// where they are linked.
func markdownToHTML(md []byte, inline map[string]inlinePlot) (string, error) {
	hr := &htmlReportRenderer{plots: inline}
	g := goldmark.New(
		goldmark.WithExtensions(extension.GFM, extension.Footnote),
		goldmark.WithParserOptions(
			parser.WithAutoHeadingID(),
			parser.WithASTTransformers(util.Prioritized(hr, 1000)),
		),
		goldmark.WithRendererOptions(
			// Raw HTML in --notes is left out (goldmark's default), so
			// notes cannot bring in scripts or loads either.
			renderer.WithNodeRenderers(util.Prioritized(hr, 100)),
		),
	)
	var b bytes.Buffer
	if err := g.Convert(md, &b); err != nil {
		return "", fmt.Errorf("convert Markdown to HTML: %w", err)
	}
	return b.String(), nil
}

// kindPlotFigure is a paragraph that held only a plot's link: rendered as
// a <figure> holding the SVG, named by the plot's title.
var kindPlotFigure = ast.NewNodeKind("PlotFigure")

type plotFigure struct {
	ast.BaseBlock
	plot inlinePlot
}

func (n *plotFigure) Kind() ast.NodeKind { return kindPlotFigure }

func (n *plotFigure) Dump(source []byte, level int) {
	ast.DumpHelper(n, source, level, map[string]string{"File": n.plot.File}, nil)
}

// htmlReportRenderer is both the AST transformer and the renderer of the
// nodes the page treats differently from goldmark's HTML: plots, links
// and images.
type htmlReportRenderer struct {
	plots map[string]inlinePlot
}

var (
	_ parser.ASTTransformer = (*htmlReportRenderer)(nil)
	_ renderer.NodeRenderer = (*htmlReportRenderer)(nil)
)

// Transform makes each paragraph holding only a plot link a plotFigure,
// and moves the Decision section (a "## Decision" heading and what
// follows it up to the next heading of its level or above) before the
// first other level-2 heading, so that the page opens with it whatever
// precedes it in the Markdown.
func (h *htmlReportRenderer) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	src := reader.Source()
	var paras []*ast.Paragraph
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if p, ok := n.(*ast.Paragraph); ok && entering {
			paras = append(paras, p)
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	for _, p := range paras {
		img, ok := p.FirstChild().(*ast.Image)
		if !ok || p.ChildCount() != 1 {
			continue
		}
		pl, ok := h.plots[string(img.Destination)]
		if !ok {
			continue
		}
		p.Parent().ReplaceChild(p.Parent(), p, &plotFigure{plot: pl})
	}

	var first, decision ast.Node
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		hd, ok := n.(*ast.Heading)
		if !ok || hd.Level != 2 {
			continue
		}
		if first == nil {
			first = n
		}
		if strings.TrimSpace(plainText(hd, src)) == "Decision" {
			decision = n
			break
		}
	}
	if decision == nil {
		return
	}
	var section []ast.Node
	for n := decision; n != nil; n = n.NextSibling() {
		if hd, ok := n.(*ast.Heading); ok && n != decision && hd.Level <= 2 {
			break
		}
		section = append(section, n)
		// The Decision's tables are what a reader comes for: they wrap
		// their cells to fit the page rather than scroll (class
		// decision in htmlCSS).
		if tbl, ok := n.(*extast.Table); ok {
			tbl.SetAttributeString("class", []byte("decision"))
		}
	}
	if decision == first {
		return
	}
	for _, n := range section {
		doc.RemoveChild(doc, n)
		doc.InsertBefore(doc, first, n)
	}
}

// RegisterFuncs renders plots, links and images.
func (h *htmlReportRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindPlotFigure, h.renderPlotFigure)
	reg.Register(ast.KindImage, h.renderImage)
	reg.Register(ast.KindLink, h.renderLink)
	reg.Register(ast.KindAutoLink, h.renderAutoLink)
}

func (h *htmlReportRenderer) renderPlotFigure(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	pl := node.(*plotFigure).plot
	// The plot draws its title itself; the figure carries it as its
	// accessible name rather than repeating it in a caption.
	id := "plot-" + strings.TrimSuffix(pl.File, path.Ext(pl.File))
	fmt.Fprintf(w, "<figure class=\"plot\" id=\"%s\" role=\"img\" aria-label=\"%s\">\n%s\n</figure>\n",
		template.HTMLEscapeString(id), template.HTMLEscapeString(pl.Title), pl.svg)
	return ast.WalkSkipChildren, nil
}

// renderImage inlines a plot linked within other text as it stands; an
// image that is not a plot becomes its alt text and the file it names, as
// the page loads nothing.
func (h *htmlReportRenderer) renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	if pl, ok := h.plots[string(n.Destination)]; ok {
		w.WriteString(`<span class="plot">` + pl.svg + `</span>`)
		return ast.WalkSkipChildren, nil
	}
	fmt.Fprintf(w, `<span class="image-omitted">[image: %s, <span class="url">%s</span>]</span>`,
		template.HTMLEscapeString(plainText(n, source)), template.HTMLEscapeString(string(n.Destination)))
	return ast.WalkSkipChildren, nil
}

// renderLink keeps in-page links (footnotes, headings) and writes any
// other as its text followed by its target, so that the page holds no URL
// a browser could follow or fetch, yet the reader still sees where it
// pointed.
func (h *htmlReportRenderer) renderLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Link)
	dest := string(n.Destination)
	if strings.HasPrefix(dest, "#") {
		if entering {
			fmt.Fprintf(w, `<a href="%s">`, template.HTMLEscapeString(dest))
		} else {
			w.WriteString("</a>")
		}
		return ast.WalkContinue, nil
	}
	if !entering && strings.TrimSpace(plainText(n, source)) != dest {
		fmt.Fprintf(w, ` (<span class="url">%s</span>)`, template.HTMLEscapeString(dest))
	}
	return ast.WalkContinue, nil
}

func (h *htmlReportRenderer) renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		n := node.(*ast.AutoLink)
		fmt.Fprintf(w, `<span class="url">%s</span>`, template.HTMLEscapeString(string(n.Label(source))))
	}
	return ast.WalkSkipChildren, nil
}

// plainText is the text of n's inline children, without markup.
func plainText(n ast.Node, source []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(source))
			if t.SoftLineBreak() || t.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		case *ast.CodeSpan:
			for s := t.FirstChild(); s != nil; s = s.NextSibling() {
				if tx, ok := s.(*ast.Text); ok {
					b.Write(tx.Segment.Value(source))
				}
			}
			return ast.WalkSkipChildren, nil
		case *ast.AutoLink:
			b.Write(t.Label(source))
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}
