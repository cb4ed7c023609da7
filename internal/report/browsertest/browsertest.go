// Package browsertest opens a generated HTML page in a real headless Chromium with the network
// cut off and fails the test on what a reader would see go wrong: console errors, requests that
// leave the file system, charts of zero size, or a blank page. The screenshot is kept as an
// artefact either way, so a failure can be looked at.
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ArtifactsEnv names the directory screenshots are kept in; by default a protobench-artifacts
// folder under the system's temporary directory, which outlives the test.
const ArtifactsEnv = "PROTOBENCH_ARTIFACTS"

// MinColourFraction is the share of a chart's pixels that must be in colour. Axes, grid and
// labels are grey; only the data is drawn in colour, so a chart without data has none.
const MinColourFraction = 0.002

// MinInkFraction is the share of the screenshot's pixels that must differ from the white
// background: a page whose charts drew nothing is mostly white, with only its text.
const MinInkFraction = 0.02

// Chromium finds a Chromium or Chrome binary, "" when none is installed.
func Chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Result is what the browser saw.
type Result struct {
	SVGs       []Box    // every <svg> element's rendered size
	Problems   []string // console errors, exceptions and off-disk requests
	Screenshot string   // path of the kept PNG
	InkFrac    float64  // share of screenshot pixels that are not background
	Width      int
	Height     int
}

// Box is one element's rendered place on the page, its label, and the share of its pixels in
// the screenshot that are not background.
type Box struct {
	Label         string
	X, Y          float64
	Width, Height float64
	Ink           float64 // share of pixels that are not background
	Colour        float64 // share of pixels in colour: data marks, not grey axes and text
}

// Check opens the page at path (a local file) offline and fails t on console errors, requests
// that are not for local files, an <svg> of zero size, no <svg> at all, or a blank screenshot.
// name names the kept screenshot. It skips t when no Chromium is installed.
func Check(t *testing.T, path, name string) Result {
	t.Helper()
	res, err := Open(path, name)
	if err != nil {
		if strings.Contains(err.Error(), "no Chromium") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Logf("screenshot of %s kept at %s (%dx%d, %.1f %% ink, %d charts)", filepath.Base(path), res.Screenshot, res.Width, res.Height, 100*res.InkFrac, len(res.SVGs))
	for _, p := range res.Problems {
		t.Errorf("%s: %s", filepath.Base(path), p)
	}
	if len(res.SVGs) == 0 {
		t.Errorf("%s: no <svg> element rendered", filepath.Base(path))
	}
	for _, b := range res.SVGs {
		switch {
		case b.Width <= 0 || b.Height <= 0:
			t.Errorf("%s: chart %q rendered at %.0f×%.0f", filepath.Base(path), b.Label, b.Width, b.Height)
		case b.Ink < MinInkFraction:
			t.Errorf("%s: chart %q is blank in the screenshot: %.2f %% of its pixels differ from the background, want at least %.0f %%", filepath.Base(path), b.Label, 100*b.Ink, 100*MinInkFraction)
		case b.Colour < MinColourFraction:
			t.Errorf("%s: chart %q shows no data: %.2f %% of its pixels are in colour, want at least %.1f %%", filepath.Base(path), b.Label, 100*b.Colour, 100*MinColourFraction)
		}
	}
	if res.InkFrac < MinInkFraction {
		t.Errorf("%s: the screenshot is blank: %.2f %% of its pixels differ from the background, want at least %.0f %%", filepath.Base(path), 100*res.InkFrac, 100*MinInkFraction)
	}
	return res
}

// Open loads the page in headless Chromium with every network request refused, and reports what
// it saw. The page itself needs no script; the harness uses the DevTools protocol to measure it.
func Open(path, name string) (Result, error) {
	bin := Chromium()
	if bin == "" {
		return Result{}, fmt.Errorf("no Chromium installed (looked for chromium, chromium-browser, google-chrome)")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Result{}, err
	}
	exe, cleanup := offline(bin)
	defer cleanup()
	var seen problems
	ctx, cancel := browser(exe, &seen)
	defer cancel()
	res, err := look(ctx, abs, name)
	res.Problems = seen.all()
	return res, err
}

// problems collects what the browser reports going wrong; its events arrive on their own
// goroutine.
type problems struct {
	mu   sync.Mutex
	list []string
}

func (p *problems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *problems) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.list
}

// listen records the events a reader would see as a fault: console errors, exceptions and
// requests that leave the file system.
func (p *problems) listen(ev any) {
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			p.add("console %s: %s", e.Type, argsText(e.Args))
		}
	case *runtime.EventExceptionThrown:
		p.add("exception: %s", e.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			p.add("console error (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		u := e.Request.URL
		if !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "about:") {
			p.add("request leaves the file system: %s", u)
		}
	}
}

// browser starts headless Chromium (exe) cut off from the network, its events going to seen,
// with 90 seconds for the whole visit. cancel stops it.
func browser(exe string, seen *problems) (ctx context.Context, cancel func()) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1200, 900),
		// Offline even where no network namespace can be made: every connection goes to a
		// closed local port and every name fails to resolve.
		chromedp.ProxyServer("127.0.0.1:9"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithListener(seen.listen))
	ctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	return ctx, func() {
		cancelTimeout()
		cancelBrowser()
		cancelAlloc()
	}
}

// look loads the page at abs, measures its charts and keeps its screenshot under name.
func look(ctx context.Context, abs, name string) (Result, error) {
	var res Result
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		return res, fmt.Errorf("chromium: %w", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		return res, fmt.Errorf("chromium: %w", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+abs), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		return res, fmt.Errorf("chromium on %s: %w", abs, err)
	}
	boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[]Box](`Array.from(document.querySelectorAll("svg")).map(s => {
		const r = s.getBoundingClientRect();
		return {Label: s.getAttribute("aria-label") || "", X: r.left + window.scrollX, Y: r.top + window.scrollY, Width: r.width, Height: r.height};
	})`))
	if err != nil {
		return res, fmt.Errorf("chromium on %s: %w", abs, err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return res, fmt.Errorf("chromium on %s: %w", abs, err)
	}
	res.SVGs = boxes
	res.Screenshot, err = keep(shot, name)
	if err != nil {
		return res, err
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return res, fmt.Errorf("screenshot of %s: %w", abs, err)
	}
	res.InkFrac = ink(img, img.Bounds())
	for i, b := range res.SVGs {
		r := image.Rect(int(b.X), int(b.Y), int(b.X+b.Width), int(b.Y+b.Height)).Intersect(img.Bounds())
		res.SVGs[i].Ink = ink(img, r)
		res.SVGs[i].Colour = colour(img, r)
	}
	res.Width, res.Height = img.Bounds().Dx(), img.Bounds().Dy()
	return res, nil
}

// offline wraps the browser in a fresh network namespace where the system allows one (root, or
// unprivileged user namespaces): there the browser has no network at all, not even loopback.
// chromedp talks to the browser over a pipe, which crosses the namespace.
func offline(bin string) (string, func()) {
	none := func() {}
	unshare, err := exec.LookPath("unshare")
	if err != nil || exec.Command(unshare, "-n", "true").Run() != nil {
		return bin, none
	}
	dir, err := os.MkdirTemp("", "protobench-chromium-")
	if err != nil {
		return bin, none
	}
	cleanup := func() { os.RemoveAll(dir) }
	wrapper := filepath.Join(dir, "chromium-offline")
	script := "#!/bin/sh\nexec " + unshare + " -n " + bin + " \"$@\"\n"
	if os.WriteFile(wrapper, []byte(script), 0o755) != nil {
		cleanup()
		return bin, none
	}
	return wrapper, cleanup
}

func argsText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		if a.Value != nil {
			parts = append(parts, string(a.Value))
		} else {
			parts = append(parts, a.Description)
		}
	}
	return strings.Join(parts, " ")
}

// ink is the share of pixels in b that are visibly not white.
func ink(img image.Image, b image.Rectangle) float64 {
	total, marked := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			total++
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				marked++
			}
		}
	}
	if total == 0 {
		return 0
	}
	return float64(marked) / float64(total)
}

// colour is the share of pixels in b whose channels differ enough to be a colour, not a grey.
func colour(img image.Image, b image.Rectangle) float64 {
	total, marked := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			hi, lo := max(r, g, bl), min(r, g, bl)
			total++
			if hi-lo > 0x3000 {
				marked++
			}
		}
	}
	if total == 0 {
		return 0
	}
	return float64(marked) / float64(total)
}

func keep(png []byte, name string) (string, error) {
	dir := os.Getenv(ArtifactsEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "protobench-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return "", err
	}
	return path, nil
}
