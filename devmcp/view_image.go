package devmcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"strings"

	"buzzbox/internal/mcp"

	"github.com/disintegration/imaging"
	"golang.org/x/image/webp"
)

type viewImageArgs struct {
	Source  *string `json:"source"`
	MaxDim  *int64  `json:"max_dim"`
	Workdir *string `json:"workdir"`
}

// viewImage is the view_image tool: load an image, shrink it if needed, and
// answer with an MCP image block.
func (s *Server) viewImage(ctx context.Context, _ *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a viewImageArgs
	if err := decodeArgs(raw, &a, false); err != nil {
		return nil, err
	}
	if a.Source == nil {
		return nil, missing("source")
	}
	if err := nonNegative("max_dim", a.MaxDim); err != nil {
		return nil, err
	}
	maxDim := int64(defaultImageDim)
	if a.MaxDim != nil {
		maxDim = min(max(*a.MaxDim, minImageDim), maxImageDim)
	}
	data, label, err := s.loadImage(ctx, strings.TrimSpace(*a.Source), s.root(a.Workdir))
	if err != nil {
		return nil, err
	}
	out, mime, summary, err := prepareImage(data, int(maxDim))
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{
		mcp.TextContent(fmt.Sprintf("%s (%s from %s)", summary, mime, label)),
		{Type: "image", Data: base64.StdEncoding.EncodeToString(out), MimeType: mime},
	}}, nil
}

// maxDataURLChars bounds a data: URL payload: the base64 length of the
// largest accepted source, plus slack for padding.
const maxDataURLChars = (maxImageSourceBytes+2)/3*4 + 4

// loadImage reads the bytes of a source and names it for the answer.
func (s *Server) loadImage(ctx context.Context, src, root string) (data []byte, label string, err error) {
	switch {
	case strings.HasPrefix(src, "data:"):
		data, err := decodeDataURL(src)
		return data, "data:URL", err
	case strings.HasPrefix(src, "http://"), strings.HasPrefix(src, "https://"):
		data, err := s.fetchImage(ctx, src)
		return data, src, err
	}
	if i := strings.Index(src, "://"); i > 0 && !strings.ContainsAny(src[:i], "/\\") {
		return nil, "", toolErrorf("unsupported URL scheme in `source`: %s (use a file path, http(s):// or data:)", src)
	}
	o, err := openChecked(root, src, s.fence, false)
	if err != nil {
		return nil, "", err
	}
	defer o.close()
	path, f := o.path, o.f
	if o.info.Size() > maxImageSourceBytes {
		return nil, "", toolErrorf("file too large: %s is %d bytes (limit %d bytes)", path, o.info.Size(), maxImageSourceBytes)
	}
	data, err = io.ReadAll(io.LimitReader(f, maxImageSourceBytes+1))
	if err != nil {
		return nil, "", toolErrorf("cannot read %s: %s", path, causeOf(err))
	}
	if len(data) > maxImageSourceBytes {
		return nil, "", toolErrorf("file too large: %s grew past %d bytes while being read", path, maxImageSourceBytes)
	}
	return data, path, nil
}

// decodeDataURL decodes data:image/<type>[;...];base64,<payload>.
func decodeDataURL(src string) ([]byte, error) {
	meta, payload, ok := strings.Cut(strings.TrimPrefix(src, "data:"), ",")
	if !ok {
		return nil, toolErrorf("malformed data: URL (no comma)")
	}
	parts := strings.Split(meta, ";")
	if !strings.HasPrefix(parts[0], "image/") {
		return nil, toolErrorf("data: URL is not an image (type %q)", parts[0])
	}
	b64 := false
	for _, p := range parts[1:] {
		if strings.EqualFold(p, "base64") {
			b64 = true
		}
	}
	if !b64 {
		return nil, toolErrorf("data: URL must be base64-encoded (data:%s;base64,...); percent-encoded data is not supported", parts[0])
	}
	payload = strings.TrimSpace(payload)
	if len(payload) > maxDataURLChars {
		return nil, toolErrorf("data: URL payload is %d chars, over the limit of %d chars (%d raw bytes)", len(payload), maxDataURLChars, maxImageSourceBytes)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, toolErrorf("data: URL base64 decode failed: %v", err)
	}
	if len(data) > maxImageSourceBytes {
		return nil, toolErrorf("data: URL image is %d bytes (limit %d raw bytes)", len(data), maxImageSourceBytes)
	}
	return data, nil
}

// fetchImage downloads an image URL with a bounded time and size.
func (s *Server) fetchImage(ctx context.Context, src string) ([]byte, error) {
	u, err := url.Parse(src)
	if err != nil || u.Host == "" {
		return nil, toolErrorf("invalid URL in `source`: %s", src)
	}
	ctx, cancel := context.WithTimeout(ctx, imageFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, toolErrorf("invalid URL in `source`: %s (%v)", src, err)
	}
	client := &http.Client{Timeout: imageFetchTimeout}
	authed := s.media.authorize(req)
	if authed {
		// The token is for this origin only: never carry it to another.
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, toolErrorf("fetch failed: %s (no answer within %s)", src, imageFetchTimeout)
		}
		return nil, toolErrorf("fetch failed: %s (%v)", src, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("fetch %s returned HTTP %d", src, resp.StatusCode)
		if !authed && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			msg += "; the relay requires authenticated media reads: set BUZZ_PRIVATE_KEY (and BUZZ_RELAY_URL) to a member identity"
		}
		return nil, &toolError{msg: msg}
	}
	if resp.ContentLength > maxImageSourceBytes {
		return nil, toolErrorf("fetch %s: Content-Length %d is over the %d byte limit", src, resp.ContentLength, maxImageSourceBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxImageSourceBytes+1))
	if err != nil {
		return nil, toolErrorf("fetch failed: %s (reading body: %v)", src, err)
	}
	if len(data) > maxImageSourceBytes {
		return nil, toolErrorf("fetch %s: body is over the %d byte limit", src, maxImageSourceBytes)
	}
	return data, nil
}

// Image MIME types, recognised by magic bytes only.
const (
	mimePNG  = "image/png"
	mimeJPEG = "image/jpeg"
	mimeGIF  = "image/gif"
	mimeWebP = "image/webp"
)

// sniffImage recognises PNG, JPEG, GIF and WebP by their first bytes; file
// names and Content-Type are never trusted.
func sniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return mimePNG
	case bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}):
		return mimeJPEG
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return mimeGIF
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return mimeWebP
	}
	return ""
}

// prepareImage checks an image and shrinks it when its longest edge is over
// maxDim or it is over maxImageOutBytes. It returns the bytes to send, their
// MIME type and a one-line summary.
func prepareImage(data []byte, maxDim int) (out []byte, mime, summary string, err error) {
	if len(data) == 0 {
		return nil, "", "", toolErrorf("empty image payload")
	}
	mime = sniffImage(data)
	if mime == "" {
		return nil, "", "", toolErrorf("unsupported image format (recognised: png, jpeg, gif, webp)")
	}
	if (mime == mimeGIF && gifAnimated(data)) || (mime == mimeWebP && webpAnimated(data)) {
		return nil, "", "", toolErrorf("animated images not supported; provide a still frame")
	}
	cfg, err := decodeConfig(mime, data)
	if err != nil {
		return nil, "", "", toolErrorf("image header unreadable: %v", err)
	}
	w, h := cfg.Width, cfg.Height
	if int64(w)*int64(h) > maxImagePixels {
		return nil, "", "", toolErrorf("image is %d×%d = %d pixels (limit %d pixels)", w, h, int64(w)*int64(h), maxImagePixels)
	}
	longest := max(w, h)
	if longest <= maxDim && len(data) <= maxImageOutBytes {
		return data, mime, fmt.Sprintf("%d×%d, %s", w, h, formatSize(len(data))), nil
	}
	srcMime := mime
	img, err := decodeImage(mime, data)
	if err != nil {
		return nil, "", "", toolErrorf("image decode failed: %v", err)
	}
	target := min(longest, maxDim)
	for attempt := 0; ; attempt++ {
		out, mime, err = resizeEncode(img, srcMime, data, target)
		if err != nil {
			return nil, "", "", toolErrorf("image encode failed: %v", err)
		}
		if len(out) <= maxImageOutBytes {
			nw, nh := resizedDims(w, h, target)
			return out, mime, fmt.Sprintf("%d×%d, %s (resized from %d×%d)", nw, nh, formatSize(len(out)), w, h), nil
		}
		if attempt == 1 {
			return nil, "", "", toolErrorf("image still %s after resize; max allowed is %.2f MiB", formatSize(len(out)), float64(maxImageOutBytes)/(1<<20))
		}
		target = max(minImageDim, target*3/4)
	}
}

// resizedDims keeps the aspect ratio with the longer side at target.
func resizedDims(w, h, target int) (int, int) {
	if w >= h {
		return target, max(1, int(int64(target)*int64(h)/int64(w)))
	}
	return max(1, int(int64(target)*int64(w)/int64(h))), target
}

// resizeEncode scales img so its longest edge is target and encodes it: PNG
// when the image has an alpha channel, else JPEG.
func resizeEncode(img image.Image, mime string, data []byte, target int) ([]byte, string, error) {
	b := img.Bounds()
	nw, nh := resizedDims(b.Dx(), b.Dy(), target)
	var small image.Image = img
	if nw != b.Dx() || nh != b.Dy() {
		small = imaging.Resize(img, nw, nh, imaging.Lanczos)
	}
	var buf bytes.Buffer
	if hasAlpha(mime, data, img) {
		err := png.Encode(&buf, small)
		return buf.Bytes(), mimePNG, err
	}
	err := jpeg.Encode(&buf, small, &jpeg.Options{Quality: jpegQuality})
	return buf.Bytes(), mimeJPEG, err
}

// hasAlpha reports whether the source image has an alpha channel (whether
// or not any pixel is transparent): a PNG of a colour type with alpha or
// with a tRNS chunk, any GIF (decoded GIFs are RGBA), a WebP whose decoded
// form is not opaque. JPEG has none.
func hasAlpha(mime string, data []byte, img image.Image) bool {
	switch mime {
	case mimeJPEG:
		return false
	case mimeGIF:
		return true
	case mimePNG:
		return pngHasAlpha(data)
	}
	if o, ok := img.(interface{ Opaque() bool }); ok {
		return !o.Opaque()
	}
	return true
}

// pngHasAlpha reads the IHDR colour type (4 grey+alpha, 6 RGBA) and looks
// for a tRNS chunk before the image data.
func pngHasAlpha(b []byte) bool {
	const ihdrColorType = 8 + 8 + 9 // signature, chunk length+type, 9 bytes into IHDR
	if len(b) <= ihdrColorType {
		return false
	}
	if ct := b[ihdrColorType]; ct == 4 || ct == 6 {
		return true
	}
	for i := 8; i+8 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[i:]))
		switch string(b[i+4 : i+8]) {
		case "tRNS":
			return true
		case "IDAT", "IEND":
			return false
		}
		if n < 0 || n > len(b) {
			return false
		}
		i += 12 + n
	}
	return false
}

func decodeConfig(mime string, data []byte) (image.Config, error) {
	r := bytes.NewReader(data)
	switch mime {
	case mimePNG:
		return png.DecodeConfig(r)
	case mimeJPEG:
		return jpeg.DecodeConfig(r)
	case mimeGIF:
		return gif.DecodeConfig(r)
	}
	return webp.DecodeConfig(r)
}

func decodeImage(mime string, data []byte) (image.Image, error) {
	r := bytes.NewReader(data)
	switch mime {
	case mimePNG:
		return png.Decode(r)
	case mimeJPEG:
		return jpeg.Decode(r)
	case mimeGIF:
		return gif.Decode(r)
	}
	return webp.Decode(r)
}

// formatSize renders a byte count as "<n> B", "<x.y> KiB" or "<x.yy> MiB".
func formatSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// gifAnimated walks the GIF block structure without decoding pixels and
// reports whether a second image follows the first. Anything it does not
// understand, or a truncated file, counts as a still image (the decoder
// will judge it).
func gifAnimated(b []byte) bool {
	const headerLen = 13 // signature, version, logical screen descriptor
	if len(b) < headerLen {
		return false
	}
	i := headerLen
	if flags := b[10]; flags&0x80 != 0 {
		i += 3 << (flags&7 + 1)
	}
	images := 0
	skipSubBlocks := func() bool {
		for i < len(b) {
			n := int(b[i])
			i++
			if n == 0 {
				return true
			}
			i += n
		}
		return false
	}
	for i < len(b) {
		switch b[i] {
		case 0x21: // extension: label, then sub-blocks
			i += 2
			if !skipSubBlocks() {
				return false
			}
		case 0x2c: // image descriptor
			images++
			if images > 1 {
				return true
			}
			if i+10 > len(b) {
				return false
			}
			flags := b[i+9]
			i += 10
			if flags&0x80 != 0 {
				i += 3 << (flags&7 + 1)
			}
			i++ // LZW minimum code size
			if !skipSubBlocks() {
				return false
			}
		default: // 0x3b trailer, or something unknown
			return false
		}
	}
	return false
}

// webpAnimated reports the animation flag of an extended (VP8X) WebP.
func webpAnimated(b []byte) bool {
	return len(b) > 20 && string(b[12:16]) == "VP8X" && b[20]&0x02 != 0
}
