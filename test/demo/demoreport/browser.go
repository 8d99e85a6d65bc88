package demoreport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Browsers the page check looks for, Debian's first.
var browsers = []string{"chromium", "chromium-browser", "google-chrome"}

// BrowserCheck opens an HTML report in a headless Chromium, as a reader's
// browser would, and returns what is wrong with the page: a screenshot
// (written to png) that is blank or a single colour, an embedded plot that
// did not decode, or an error the page logged. A missing browser is an
// error that says how to install it.
func BrowserCheck(ctx context.Context, html, png string) ([]string, error) {
	bin, err := findBrowser()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(html)
	if err != nil {
		return nil, err
	}
	profile, err := os.MkdirTemp("", "joulie-demo-chromium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	common := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", "--hide-scrollbars"}
	var problems []string

	shot := exec.CommandContext(ctx, bin, append(common, "--window-size=1280,1600", "--screenshot="+png, "file://"+abs)...)
	var shotLog bytes.Buffer
	shot.Stdout, shot.Stderr = &shotLog, &shotLog
	if err := shot.Run(); err != nil {
		return nil, fmt.Errorf("%s --screenshot: %w\n%s", bin, err, shotLog.String())
	}
	problems = append(problems, consoleErrors(shotLog.String())...)
	blank, err := uniform(png)
	if err != nil {
		return nil, err
	}
	if blank != "" {
		problems = append(problems, blank)
	}

	// --dump-dom prints the page after its load event, when the page's
	// own script has marked whether every image decoded.
	dom := exec.CommandContext(ctx, bin, append(common, "--dump-dom", "file://"+abs)...)
	var out, domLog bytes.Buffer
	dom.Stdout, dom.Stderr = &out, &domLog
	if err := dom.Run(); err != nil {
		return nil, fmt.Errorf("%s --dump-dom: %w\n%s", bin, err, domLog.String())
	}
	problems = append(problems, consoleErrors(domLog.String())...)
	switch m := imagesMark.FindStringSubmatch(out.String()); {
	case m == nil:
		problems = append(problems, "the page's load script did not run (no data-images mark in the DOM)")
	case m[1] != "ok":
		problems = append(problems, "embedded images did not decode: "+m[1])
	}
	return problems, nil
}

var imagesMark = regexp.MustCompile(`data-images="([^"]*)"`)

func findBrowser() (string, error) {
	for _, b := range browsers {
		if p, err := exec.LookPath(b); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no headless browser found (chromium): run hack/install-deps.sh, or apt-get install chromium")
}

// consoleErrors picks the page's console errors and failed loads out of
// Chromium's log; the browser's own chatter (GPU, D-Bus) is not the
// page's fault.
func consoleErrors(log string) []string {
	var errs []string
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, "CONSOLE") && (strings.Contains(line, "Uncaught") || strings.Contains(line, "ERROR") || strings.Contains(line, "Failed to load")) {
			errs = append(errs, "console: "+strings.TrimSpace(line))
		}
		if strings.Contains(line, "net::ERR_") {
			errs = append(errs, "load: "+strings.TrimSpace(line))
		}
	}
	return errs
}

// uniform says what is wrong if the screenshot is empty or nearly one
// colour: fewer than 1% of its pixels differ from the most common one.
func uniform(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("the browser wrote no screenshot: %w", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return "", fmt.Errorf("decode screenshot %s: %w", path, err)
	}
	b := img.Bounds()
	if b.Empty() {
		return "the screenshot is empty", nil
	}
	counts := map[[4]uint32]int{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			counts[[4]uint32{r >> 8, g >> 8, bl >> 8, a >> 8}]++
		}
	}
	total, most := 0, 0
	for _, n := range counts {
		total += n
		most = max(most, n)
	}
	if other := total - most; other*100 < total {
		return fmt.Sprintf("the screenshot is blank: %d of %d sampled pixels are one colour (%d colours in all)", most, total, len(counts)), nil
	}
	return "", nil
}
