package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPublishedImages fails for each file in the published plots directory
// (docs/published.json's "plots", docs/img) that neither PERFORMANCE.md
// nor a page under docs/ (Markdown or HTML) names: a picture of an earlier
// campaign that nothing shows any more. TestPublished's -update-published
// path removes them (report.PruneStale).
func TestPublishedImages(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	b, err := os.ReadFile("docs/published.json")
	if err != nil {
		t.Fatal(err)
	}
	var m published
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("docs/published.json: %v", err)
	}
	if m.Plots == "" {
		t.Fatal("docs/published.json names no plots directory")
	}
	pages := []string{"PERFORMANCE.md"}
	err = filepath.WalkDir("docs", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".md" || ext == ".html") {
			pages = append(pages, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text.Write(b)
	}
	imgs, err := os.ReadDir(m.Plots)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, img := range imgs {
		if img.IsDir() {
			continue
		}
		n++
		// Pages link an image by its path from the page (docs/img/x.svg,
		// img/x.svg); its name is in every such link.
		if !strings.Contains(text.String(), "/"+img.Name()) {
			t.Errorf("%s is referenced by neither PERFORMANCE.md nor any of the %d pages under docs/; run go test ./cmd/coldstart -run TestPublished -update-published",
				filepath.Join(m.Plots, img.Name()), len(pages)-1)
		}
	}
	if n == 0 {
		t.Errorf("%s holds no images", m.Plots)
	}
}
