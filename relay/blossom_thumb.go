package relay

import (
	"fmt"
	"image"
	_ "image/gif" // decoders for thumbnails
	_ "image/jpeg"
	_ "image/png"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/disintegration/imaging"
	_ "golang.org/x/image/webp"
)

const (
	// thumbSide bounds a thumbnail's width and height, in pixels: the web
	// client shows images inline at most 320 CSS pixels wide.
	thumbSide = 320
	// maxThumbSourcePixels bounds the images the relay decodes to make a
	// thumbnail: decoding takes 4 bytes a pixel, so 12 megapixels (a
	// phone photo) cost 48 MB. Bigger images, and decompression bombs
	// that claim to be, get no thumbnail; the client shows a file card.
	maxThumbSourcePixels = 12_000_000
)

// thumbMu lets one thumbnail be made at a time, so that concurrent image
// uploads do not add up their decoded sizes.
var thumbMu sync.Mutex

// makeThumb writes a thumbnail of the image at src to dst when typ is an
// image type it decodes, returning the image's dimensions ("WxH", "" when
// not an image) and the thumbnail's type ("" when none was made).
func makeThumb(src, dst, typ string, log *slog.Logger) (dim, thumbType string) {
	switch typ {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return "", ""
	}
	f, err := os.Open(src)
	if err != nil {
		return "", ""
	}
	cfg, _, err := image.DecodeConfig(f)
	f.Close()
	if err != nil {
		return "", ""
	}
	dim = fmt.Sprintf("%dx%d", cfg.Width, cfg.Height)
	if int64(cfg.Width)*int64(cfg.Height) > maxThumbSourcePixels {
		log.Info("no thumbnail: image too large to decode", "dim", dim, "max_pixels", maxThumbSourcePixels)
		return dim, ""
	}
	thumbMu.Lock()
	defer thumbMu.Unlock()
	img, err := imaging.Open(src, imaging.AutoOrientation(true))
	if err != nil {
		log.Info("no thumbnail", "err", err)
		return dim, ""
	}
	if b := img.Bounds(); b.Dx() > thumbSide || b.Dy() > thumbSide {
		img = imaging.Fit(img, thumbSide, thumbSide, imaging.Lanczos)
	}
	format, thumbType := imaging.PNG, "image/png"
	if typ == "image/jpeg" {
		format, thumbType = imaging.JPEG, "image/jpeg"
	}
	out, err := os.CreateTemp(filepath.Dir(dst), ".thumb-*")
	if err != nil {
		return dim, ""
	}
	defer os.Remove(out.Name())
	if err := imaging.Encode(out, img, format, imaging.JPEGQuality(80)); err != nil {
		out.Close()
		return dim, ""
	}
	if err := out.Close(); err != nil || os.Rename(out.Name(), dst) != nil {
		return dim, ""
	}
	return dim, thumbType
}
