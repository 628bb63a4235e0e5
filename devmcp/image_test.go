package devmcp_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

func pngBytes(t *testing.T, w, h int, alpha bool) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			a := uint8(255)
			if alpha {
				a = uint8(x)
			}
			img.SetNRGBA(x, y, color.NRGBA{uint8(x), uint8(y), uint8(x ^ y), a})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 90, 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 70}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngHeaderOnly is a PNG signature and IHDR claiming w×h, with no pixels:
// enough to read dimensions, never enough to decode.
func pngHeaderOnly(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// imageOf returns the decoded image block of a view_image result, its MIME
// type and the text block.
func imageOf(t *testing.T, res map[string]any) (data []byte, mime, txt string) {
	t.Helper()
	txt = okText(t, res)
	blocks := res["content"].([]any)
	if len(blocks) != 2 {
		t.Fatalf("view_image gave %d blocks; want text and image", len(blocks))
	}
	img := blocks[1].(map[string]any)
	if img["type"] != "image" {
		t.Fatalf("second block = %v", img["type"])
	}
	data, err := base64.StdEncoding.DecodeString(img["data"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return data, img["mimeType"].(string), txt
}

func TestViewImage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServer(t, startOpts{dir: dir})
	p.initialize("2025-11-25")
	small := pngBytes(t, 64, 48, false)
	os.WriteFile(filepath.Join(dir, "small.png"), small, 0o644)
	os.WriteFile(filepath.Join(dir, "wide.png"), pngBytes(t, 4096, 2048, true), 0o644)
	os.WriteFile(filepath.Join(dir, "photo.jpg"), jpegBytes(t, 3000, 2000), 0o644)
	os.WriteFile(filepath.Join(dir, "tiny.png"), pngBytes(t, 100, 50, false), 0o644)

	data, mime, txt := imageOf(t, p.tool("view_image", map[string]any{"source": "small.png"}))
	if !bytes.Equal(data, small) || mime != "image/png" || !strings.HasPrefix(txt, "64×48, ") {
		t.Errorf("small PNG: mime %s, same bytes %v, text %q; want it passed through", mime, bytes.Equal(data, small), txt)
	}
	for _, tc := range []struct {
		src        string
		maxDim     int
		mime       string
		wantW, wnH int
	}{
		{"wide.png", 512, "image/png", 512, 256},
		{"photo.jpg", 800, "image/jpeg", 800, 533},
		{"tiny.png", 10, "image/jpeg", 64, 32},
	} {
		data, mime, txt := imageOf(t, p.tool("view_image", map[string]any{"source": tc.src, "max_dim": tc.maxDim}))
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil || mime != tc.mime || cfg.Width != tc.wantW || cfg.Height != tc.wnH || !strings.Contains(txt, "resized from") {
			t.Errorf("%s max_dim %d: %s %dx%d (%v) %q; want %s %dx%d", tc.src, tc.maxDim, mime, cfg.Width, cfg.Height, err, txt, tc.mime, tc.wantW, tc.wnH)
		}
	}
	os.WriteFile(filepath.Join(dir, "huge.png"), pngBytes(t, 3000, 1000, false), 0o644)
	data, _, _ = imageOf(t, p.tool("view_image", map[string]any{"source": "huge.png", "max_dim": 5000}))
	if cfg, _, _ := image.DecodeConfig(bytes.NewReader(data)); cfg.Width != 2048 {
		t.Errorf("max_dim 5000 gave width %d; want clamped to 2048", cfg.Width)
	}
	outside := filepath.Join(t.TempDir(), "x.png")
	os.WriteFile(outside, small, 0o644)
	if _, mime, _ := imageOf(t, p.tool("view_image", map[string]any{"source": outside})); mime != "image/png" {
		t.Errorf("path outside workdir: %s", mime)
	}
}

func TestViewImageWebP(t *testing.T) {
	p := startServer(t, startOpts{dir: "testdata"})
	p.initialize("2025-11-25")
	for _, tc := range []struct {
		src, mime string
		maxDim    int
	}{
		{"still.webp", "image/webp", 0}, // passes through
		{"big.webp", "image/jpeg", 100}, // decoded, resized, no alpha
		{"alpha.webp", "image/png", 32}, // decoded, resized, alpha kept
	} {
		args := map[string]any{"source": tc.src}
		if tc.maxDim > 0 {
			args["max_dim"] = tc.maxDim
		}
		data, mime, txt := imageOf(t, p.tool("view_image", args))
		if mime != tc.mime || len(data) == 0 {
			t.Errorf("%s: %s %q; want %s", tc.src, mime, txt, tc.mime)
		}
	}
	if got := errText(t, p.tool("view_image", map[string]any{"source": "anim.webp"})); !strings.Contains(got, "animated images not supported") {
		t.Errorf("animated WebP: %q", got)
	}
}

func TestViewImageRejects(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, startOpts{dir: dir})
	p.initialize("2025-11-25")
	two := &gif.GIF{}
	for i := range 2 {
		fr := image.NewPaletted(image.Rect(0, 0, 4, 4), color.Palette{color.Black, color.White})
		fr.SetColorIndex(i, i, 1)
		two.Image = append(two.Image, fr)
		two.Delay = append(two.Delay, 10)
	}
	var gb bytes.Buffer
	if err := gif.EncodeAll(&gb, two); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "anim.gif"), gb.Bytes(), 0o644)
	bmp := append([]byte("BM"), make([]byte, 60)...)
	os.WriteFile(filepath.Join(dir, "x.bmp"), bmp, 0o644)
	os.WriteFile(filepath.Join(dir, "bomb.png"), pngHeaderOnly(9000, 9000), 0o644)
	os.WriteFile(filepath.Join(dir, "empty.png"), nil, 0o644)
	b64 := base64.StdEncoding.EncodeToString(pngBytes(t, 8, 8, false))
	for _, tc := range []struct{ src, want string }{
		{"x.bmp", "unsupported image format"},
		{"anim.gif", "animated images not supported"},
		{"bomb.png", "9000×9000 = 81000000 pixels (limit 67108864 pixels)"},
		{"empty.png", "empty image payload"},
		{"missing.png", "path not accessible"},
		{"ftp://example.com/x.png", "unsupported URL scheme"},
		{"data:image/png,raw", "base64"},
		{"data:text/plain;base64," + b64, "not an image"},
		{"data:image/png;base64,%%%", "base64 decode failed"},
		{"data:image/png;base64," + strings.Repeat("A", 30<<20), "raw bytes"},
	} {
		got := errText(t, p.tool("view_image", map[string]any{"source": tc.src}))
		if !strings.Contains(got, tc.want) {
			t.Errorf("view_image(%.40s) = %q; want %q", tc.src, got, tc.want)
		}
	}
	data, mime, txt := imageOf(t, p.tool("view_image", map[string]any{"source": "data:image/png;base64," + b64}))
	if mime != "image/png" || len(data) == 0 || !strings.HasSuffix(txt, "from data:URL)") {
		t.Errorf("data URL: %s %q", mime, txt)
	}
}

// mediaServer is an HTTP server that records the Authorization header of
// each request by path.
type mediaServer struct {
	*httptest.Server
	mu   sync.Mutex
	auth map[string]string
}

func newMediaServer(t *testing.T, body []byte) *mediaServer {
	m := &mediaServer{auth: map[string]string{}}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.auth[r.URL.Path] = r.Header.Get("Authorization")
		m.mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/404.png"):
			http.NotFound(w, r)
		case strings.HasSuffix(r.URL.Path, "/huge.png"):
			w.Header().Set("Content-Length", fmt.Sprint(30<<20))
			w.WriteHeader(200)
		default:
			w.Write(body)
		}
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mediaServer) authFor(path string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.auth[path]
}

func TestViewImageHTTP(t *testing.T) {
	body := pngBytes(t, 16, 16, false)
	relay := newMediaServer(t, body)
	other := newMediaServer(t, body)
	key := strings.Repeat("0", 63) + "3"
	p := startServer(t, startOpts{env: []string{"BUZZ_RELAY_URL=" + strings.Replace(relay.URL, "http://", "ws://", 1), "BUZZ_PRIVATE_KEY=" + key}})
	p.initialize("2025-11-25")
	if _, mime, _ := imageOf(t, p.tool("view_image", map[string]any{"source": relay.URL + "/media/a.png"})); mime != "image/png" {
		t.Errorf("fetch: %s", mime)
	}
	checkMediaToken(t, relay.authFor("/media/a.png"), strings.TrimPrefix(relay.URL, "http://"))
	imageOf(t, p.tool("view_image", map[string]any{"source": relay.URL + "/other/a.png"}))
	if a := relay.authFor("/other/a.png"); a != "" {
		t.Errorf("non-media path got Authorization %q", a)
	}
	imageOf(t, p.tool("view_image", map[string]any{"source": other.URL + "/media/a.png"}))
	if a := other.authFor("/media/a.png"); a != "" {
		t.Errorf("another origin got Authorization %q", a)
	}
	if got := errText(t, p.tool("view_image", map[string]any{"source": relay.URL + "/404.png"})); !strings.Contains(got, "returned HTTP 404") {
		t.Errorf("404: %q", got)
	}
	if got := errText(t, p.tool("view_image", map[string]any{"source": relay.URL + "/huge.png"})); !strings.Contains(got, "Content-Length") {
		t.Errorf("huge Content-Length: %q", got)
	}
}

func TestViewImageFetchTimeout(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for the 10 s fetch timeout")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts and never answers; ends when ln closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	start := time.Now()
	got := errText(t, p.tool("view_image", map[string]any{"source": "http://" + ln.Addr().String() + "/x.png"}))
	if d := time.Since(start); d > 15*time.Second || !strings.Contains(got, "fetch failed") {
		t.Errorf("silent server: %q after %v; want fetch failed within about 10s", got, d)
	}
}

// checkMediaToken decodes an "Authorization: Nostr <token>" header and checks
// the signed kind-24242 read token inside.
func checkMediaToken(t *testing.T, header, server string) {
	t.Helper()
	tok, ok := strings.CutPrefix(header, "Nostr ")
	if !ok {
		t.Fatalf("Authorization = %q; want a Nostr token", header)
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatalf("token is not unpadded base64url: %v", err)
	}
	var evt nostr.Event
	if err := json.Unmarshal(raw, &evt); err != nil {
		t.Fatalf("token %s: %v", raw, err)
	}
	if ok, err := evt.CheckSignature(); !ok || err != nil {
		t.Errorf("token signature does not verify: %v", err)
	}
	if evt.Kind != 24242 || evt.Content != "Get buzz-media" {
		t.Errorf("token kind %d content %q", evt.Kind, evt.Content)
	}
	tags := map[string]string{}
	for _, tag := range evt.Tags {
		if len(tag) >= 2 {
			tags[tag[0]] = tag[1]
		}
	}
	exp, _ := strconv.ParseInt(tags["expiration"], 10, 64)
	if tags["t"] != "get" || tags["server"] != server || exp < time.Now().Unix()+500 || exp > time.Now().Unix()+700 {
		t.Errorf("token tags %v; want t=get, server=%s, expiration about 600 s ahead", evt.Tags, server)
	}
	if _, hasX := tags["x"]; hasX {
		t.Errorf("token carries an x tag")
	}
}

// TestViewImageFetchCancelled: a cancelled fetch ends at once with no reply.
func TestViewImageFetchCancelled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() { // accepts one connection and never answers; ends when ln closes
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	id, reply := p.request("tools/call", map[string]any{"name": "view_image", "arguments": map[string]any{"source": "http://" + ln.Addr().String() + "/x.png"}})
	c := <-accepted // the fetch is in flight
	defer c.Close()
	p.sendLine(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.Itoa(id) + `}}`)
	p.waitLog("call cancelled")
	if r := p.call("ping", nil); r["error"] != nil {
		t.Fatalf("ping after cancel = %v", r)
	}
	select {
	case m := <-reply:
		t.Errorf("cancelled request got a reply: %v", m)
	default:
	}
}
