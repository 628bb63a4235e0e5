package relay

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
)

// Blossom (BUD-01/02) on the relay's HTTP listener, for its members:
//
//	PUT    /upload          store a blob (kind 24242 auth, t=upload, x=hash)
//	HEAD   /upload          BUD-06: would this upload (X-Content-Length, X-SHA-256) be taken?
//	GET    /<sha256>[.ext]  fetch a blob (auth when the relay is not open or the blob is a private channel's)
//	HEAD   /<sha256>[.ext]  the same headers without the body
//	DELETE /<sha256>        drop your upload of it (t=delete, x=hash); the owner or an admin drops the blob
//	GET    /list/<pubkey>   descriptors of the blobs pubkey uploaded that the caller may read
//	GET    /thumb/<sha256>  the thumbnail the relay made of an image at upload
//
// An upload is streamed to a temporary file in the blob directory while it
// is hashed, then renamed to its hash: it is never held in memory, and a
// body over the size limit is refused (413, naming the limit) as soon as
// its Content-Length says so or, without one, once the limit is passed.
// The type is detected from the content (http.DetectContentType, plus
// SVG), never taken from the request. An upload whose authorization
// carries a channel's h tag belongs to that channel: it is served only to
// those who may read the channel. One without is for the relay's members.
// A blob uploaded several times keeps one record per upload, and may be
// read by whoever may read any of them (each uploader had the bytes).
// Every blob is served with nosniff and a sandbox CSP; any type that is not
// a raster image, audio, video or plain text is also served as an
// attachment, so that nothing uploaded runs script in the web client's
// origin.
//
// Blobs live in one flat directory (--blob-dir, default <data>/blobs):
// <sha256> holds the bytes, <sha256>.json the blobMeta, <sha256>.thumb the
// thumbnail. Instances sharing one directory share the blobs; two
// instances recording an upload of the same blob at the same moment may
// lose one of the records (the bytes are safe; that uploader uploads
// again).

// DefaultMaxBlobBytes bounds one uploaded blob: 50 MB, the upload limit
// of upstream's workspace (issue 27), enough for a screen recording or a
// log archive. --max-blob-bytes changes it.
const DefaultMaxBlobBytes = 50 << 20

const (
	// blobClockSkew is how far in the future a kind 24242 created_at may
	// be: BUD-01 wants it in the past; a client whose clock runs a little
	// ahead is not refused for it.
	blobClockSkew = 30 * time.Second
	// blobSniffBytes is how much of a blob type detection reads, as
	// http.DetectContentType considers.
	blobSniffBytes = 512
	// maxBlobAuthHeader bounds the Authorization header of a blob request
	// (a base64 event), as the bridge bounds events.
	maxBlobAuthHeader = 16 << 10
	// staleUpload is how long a temporary upload file must have gone
	// unwritten to be taken as left by a killed process and removed at
	// start; a live upload writes to its file all the time.
	staleUpload = 24 * time.Hour
)

// inlineBlobType reports whether a blob of type typ is served inline
// (shown by the browser): raster images, audio, video and plain text,
// none of which runs script. Anything else is served as an attachment.
func inlineBlobType(typ string) bool {
	switch typ {
	case "image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp",
		"audio/mpeg", "audio/ogg", "audio/wave", "audio/aiff",
		"video/mp4", "video/webm", "video/avi",
		"text/plain; charset=utf-8":
		return true
	}
	return false
}

// isHash reports whether s is a sha256 in lowercase hex.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// blobPathHash reads /<sha256>[.ext] (ext: 1 to 10 of a-z0-9).
func blobPathHash(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/")
	if !ok {
		return "", false
	}
	h, ext, dotted := strings.Cut(rest, ".")
	if !isHash(h) {
		return "", false
	}
	if dotted {
		if len(ext) < 1 || len(ext) > 10 {
			return "", false
		}
		for i := 0; i < len(ext); i++ {
			if c := ext[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
				return "", false
			}
		}
	}
	return h, true
}

// prefixedHash reads prefix<sha256>, as /thumb/ and /list/ take it.
func prefixedHash(p, prefix string) (string, bool) {
	h, ok := strings.CutPrefix(p, prefix)
	return h, ok && isHash(h)
}

// isBlobPath reports whether p is one of the Blossom routes.
func isBlobPath(p string) bool {
	_, blob := blobPathHash(p)
	_, thumb := prefixedHash(p, "/thumb/")
	_, list := prefixedHash(p, "/list/")
	return p == "/upload" || blob || thumb || list
}

// blobUpload is one upload of a blob: who, for which channel ("" for the
// whole relay), when.
type blobUpload struct {
	Pubkey   string `json:"pubkey"`
	Channel  string `json:"channel,omitempty"`
	Uploaded int64  `json:"uploaded"`
}

// blobMeta is the record kept beside a blob.
type blobMeta struct {
	Type      string       `json:"type"`
	Size      int64        `json:"size"`
	Dim       string       `json:"dim,omitempty"`        // WxH of an image
	ThumbType string       `json:"thumb_type,omitempty"` // set when a thumbnail was made
	Uploads   []blobUpload `json:"uploads"`
}

// blobDescriptor is BUD-02's answer to an upload, with the image fields
// the web client and the CLI put in a NIP-92 imeta tag.
type blobDescriptor struct {
	URL      string `json:"url"`
	SHA256   string `json:"sha256"`
	Size     int64  `json:"size"`
	Type     string `json:"type"`
	Uploaded int64  `json:"uploaded"`
	Dim      string `json:"dim,omitempty"`
	Thumb    string `json:"thumb,omitempty"`
}

// blobStore is the blob directory.
type blobStore struct {
	dir string
	max int64
}

func (b *blobStore) path(hash string) string      { return filepath.Join(b.dir, hash) }
func (b *blobStore) metaPath(hash string) string  { return filepath.Join(b.dir, hash+".json") }
func (b *blobStore) thumbPath(hash string) string { return filepath.Join(b.dir, hash+".thumb") }

func (b *blobStore) meta(hash string) (*blobMeta, error) {
	raw, err := os.ReadFile(b.metaPath(hash))
	if err != nil {
		return nil, err
	}
	var m blobMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("blob %s: metadata: %w", hash, err)
	}
	return &m, nil
}

func (b *blobStore) writeMeta(hash string, m *blobMeta) error {
	raw, _ := json.Marshal(m)
	tmp, err := os.CreateTemp(b.dir, ".meta-*")
	if err != nil {
		return fmt.Errorf("blob %s: metadata: %w", hash, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return fmt.Errorf("blob %s: metadata: %w", hash, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("blob %s: metadata: %w", hash, err)
	}
	return os.Rename(tmp.Name(), b.metaPath(hash))
}

// blobError writes a BUD-01 error: JSON {"message"} and X-Reason.
func blobError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("X-Reason", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func blobCORS(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Headers", "Authorization, *")
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, PUT, DELETE")
	h.Set("Access-Control-Expose-Headers", "*")
}

// serveBlossom routes a Blossom request.
func (r *Relay) serveBlossom(w http.ResponseWriter, req *http.Request) {
	blobCORS(w)
	if req.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	p := req.URL.Path
	switch {
	case p == "/upload":
		switch req.Method {
		case http.MethodPut:
			r.serveUpload(w, req)
		case http.MethodHead:
			r.serveUploadCheck(w, req)
		default:
			w.Header().Set("Allow", "PUT, HEAD")
			blobError(w, http.StatusMethodNotAllowed, "use PUT /upload")
		}
	case strings.HasPrefix(p, "/thumb/"):
		hash, _ := prefixedHash(p, "/thumb/")
		r.serveBlob(w, req, hash, true)
	case strings.HasPrefix(p, "/list/"):
		pubkey, _ := prefixedHash(p, "/list/")
		r.serveList(w, req, pubkey)
	default:
		hash, _ := blobPathHash(p)
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			r.serveBlob(w, req, hash, false)
		case http.MethodDelete:
			r.serveBlobDelete(w, req, hash)
		default:
			w.Header().Set("Allow", "GET, HEAD, DELETE")
			blobError(w, http.StatusMethodNotAllowed, "use GET, HEAD or DELETE on a blob")
		}
	}
}

// blobAuth checks the Authorization header of a blob request: a kind
// 24242 event (BUD-01) with verb, or, where allowNIP98 is true, a NIP-98 token
// for this request. It returns the caller; a request without the header
// gets caller{} and no error, for the caller to decide.
func (r *Relay) blobAuth(req *http.Request, verb string, allowNIP98 bool) (caller, *nostr.Event, int, string) {
	h := req.Header.Get("Authorization")
	if h == "" {
		return caller{}, nil, 0, ""
	}
	if len(h) > maxBlobAuthHeader {
		return caller{}, nil, http.StatusUnauthorized, "authorization: header too long"
	}
	scheme, b64, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, nip98.Scheme) {
		return caller{}, nil, http.StatusUnauthorized, "authorization: want the " + nip98.Scheme + " scheme"
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		if raw, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(b64), "=")); err != nil {
			return caller{}, nil, http.StatusUnauthorized, "authorization: not base64"
		}
	}
	var ev nostr.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return caller{}, nil, http.StatusUnauthorized, "authorization: not an event"
	}
	if ev.Kind == nip98.Kind && allowNIP98 {
		c, _, berr := r.authenticate(req, nil)
		if berr != nil {
			return caller{}, nil, berr.status, berr.msg
		}
		return c, nil, 0, ""
	}
	if ev.Kind != workspace.KindMediaAuth {
		return caller{}, nil, http.StatusUnauthorized, fmt.Sprintf("authorization: kind %d, want %d", ev.Kind, workspace.KindMediaAuth)
	}
	if err := checkSigned(&ev); err != nil {
		return caller{}, nil, http.StatusUnauthorized, "authorization: " + err.Error()
	}
	now := r.cfg.Now()
	if ev.CreatedAt.Time().After(now.Add(blobClockSkew)) {
		return caller{}, nil, http.StatusUnauthorized, "authorization: created_at is in the future"
	}
	exp, ok := tagValue(&ev, "expiration")
	if !ok {
		return caller{}, nil, http.StatusUnauthorized, "authorization: no expiration tag"
	}
	if at, err := strconv.ParseInt(exp, 10, 64); err != nil || time.Unix(at, 0).Before(now) {
		return caller{}, nil, http.StatusUnauthorized, "authorization: expired"
	}
	if t, _ := tagValue(&ev, "t"); t != verb {
		return caller{}, nil, http.StatusUnauthorized, fmt.Sprintf("authorization: t tag %q, want %q", t, verb)
	}
	c := caller{pubkey: ev.PubKey, owner: eventAttestation(&ev, now)}
	if msg := r.gate(c); msg != "" {
		return caller{}, nil, http.StatusForbidden, msg
	}
	return c, &ev, 0, ""
}

// namesHash reports whether a 24242 event has an x tag for hash.
func namesHash(ev *nostr.Event, hash string) bool {
	for _, x := range tagValues(ev, "x") {
		if strings.EqualFold(strings.TrimSpace(x), hash) {
			return true
		}
	}
	return false
}

// namesServer reports whether a 24242 event's server tag names this relay.
func (r *Relay) namesServer(req *http.Request, ev *nostr.Event) bool {
	bases := r.names().bases(r.httpScheme(req))
	for _, s := range tagValues(ev, "server") {
		s = strings.TrimRight(s, "/")
		for _, b := range bases {
			if strings.EqualFold(s, strings.TrimRight(b, "/")) {
				return true
			}
		}
	}
	return false
}

// channelWritable reports whether c may post a file to channel id: it
// exists, is not deleted, and c may read it.
func (r *Relay) channelWritable(c caller, id string) bool {
	if !r.channelReadableIn(c, &nostr.Event{}, id) {
		return false
	}
	ch, ok := r.chans.get(id)
	return ok && !ch.deleted
}

// uploadAuth checks an upload's authorization and channel, writing the
// refusal when there is one.
func (r *Relay) uploadAuth(w http.ResponseWriter, req *http.Request) (caller, *nostr.Event, string, bool) {
	c, ev, status, msg := r.blobAuth(req, "upload", false)
	if status != 0 {
		blobError(w, status, msg)
		return caller{}, nil, "", false
	}
	if ev == nil {
		blobError(w, http.StatusUnauthorized, "upload needs a kind 24242 authorization (t upload, x the blob's sha256)")
		return caller{}, nil, "", false
	}
	channel, _ := tagValue(ev, "h")
	if channel != "" && !r.channelWritable(c, channel) {
		blobError(w, http.StatusForbidden, "restricted: not a member of channel "+channel)
		return caller{}, nil, "", false
	}
	return c, ev, channel, true
}

func (r *Relay) tooBig() string {
	return fmt.Sprintf("blob too large: the limit is %s (%d bytes, --max-blob-bytes)", mb(r.blobs.max), r.blobs.max)
}

// serveUploadCheck answers BUD-06's HEAD /upload: whether an upload of
// X-Content-Length bytes hashing to X-SHA-256, with this authorization,
// would be taken (200), or why not (the status and X-Reason).
func (r *Relay) serveUploadCheck(w http.ResponseWriter, req *http.Request) {
	n, err := strconv.ParseInt(req.Header.Get("X-Content-Length"), 10, 64)
	if err != nil || n < 0 {
		blobError(w, http.StatusLengthRequired, "X-Content-Length: want the blob's size in bytes")
		return
	}
	if n > r.blobs.max {
		blobError(w, http.StatusRequestEntityTooLarge, r.tooBig())
		return
	}
	_, ev, _, ok := r.uploadAuth(w, req)
	if !ok {
		return
	}
	if h := strings.ToLower(req.Header.Get("X-SHA-256")); h != "" && (!isHash(h) || !namesHash(ev, h)) {
		blobError(w, http.StatusUnauthorized, "authorization: no x tag names X-SHA-256 "+h)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (r *Relay) serveUpload(w http.ResponseWriter, req *http.Request) {
	c, ev, channel, ok := r.uploadAuth(w, req)
	if !ok {
		return
	}
	limit := r.blobs.max
	tooBig := r.tooBig()
	if req.ContentLength > limit {
		w.Header().Set("Connection", "close")
		blobError(w, http.StatusRequestEntityTooLarge, tooBig)
		return
	}
	tmp, err := os.CreateTemp(r.blobs.dir, ".upload-*")
	if err != nil {
		r.log.Error("blob upload", "err", err)
		blobError(w, http.StatusInternalServerError, "cannot store the blob")
		return
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	hasher := sha256.New()
	head := &headBuffer{max: blobSniffBytes}
	n, err := io.Copy(io.MultiWriter(tmp, hasher, head), io.LimitReader(req.Body, limit+1))
	if err != nil {
		blobError(w, http.StatusBadRequest, "upload: reading the body: "+err.Error())
		return
	}
	if n > limit {
		w.Header().Set("Connection", "close")
		blobError(w, http.StatusRequestEntityTooLarge, tooBig)
		return
	}
	hash := hex.EncodeToString(hasher.Sum(nil))
	if !namesHash(ev, hash) {
		blobError(w, http.StatusUnauthorized, "authorization: no x tag names the uploaded blob's sha256 "+hash)
		return
	}
	if err := tmp.Close(); err != nil {
		blobError(w, http.StatusInternalServerError, "cannot store the blob")
		return
	}
	// The same hash is the same bytes: a rename over a blob stored
	// before changes nothing a reader could see.
	if err := os.Rename(tmp.Name(), r.blobs.path(hash)); err != nil {
		r.log.Error("blob upload", "err", err)
		blobError(w, http.StatusInternalServerError, "cannot store the blob")
		return
	}
	fresh := &blobMeta{Type: detectBlobType(head.b), Size: n}
	if _, err := r.blobs.meta(hash); err != nil {
		// Made outside the lock: decoding an image takes a while.
		fresh.Dim, fresh.ThumbType = makeThumb(r.blobs.path(hash), r.blobs.thumbPath(hash), fresh.Type, r.log)
	}
	r.blobMu.Lock()
	defer r.blobMu.Unlock()
	m, err := r.blobs.meta(hash)
	if err != nil {
		m = fresh
	}
	up := blobUpload{Pubkey: c.pubkey, Channel: channel, Uploaded: r.cfg.Now().Unix()}
	if !hasUpload(m, up) {
		m.Uploads = append(m.Uploads, up)
	}
	if err := r.blobs.writeMeta(hash, m); err != nil {
		r.log.Error("blob upload", "err", err)
		blobError(w, http.StatusInternalServerError, "cannot store the blob")
		return
	}
	r.log.Info("blob stored", "sha256", hash, "size", n, "type", m.Type, "by", c.pubkey, "channel", channel)
	writeJSON(w, http.StatusOK, r.descriptor(req, hash, m, up.Uploaded))
}

func hasUpload(m *blobMeta, up blobUpload) bool {
	for _, u := range m.Uploads {
		if u.Pubkey == up.Pubkey && u.Channel == up.Channel {
			return true
		}
	}
	return false
}

func mb(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KB", n>>10)
	}
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}

func (r *Relay) descriptor(req *http.Request, hash string, m *blobMeta, uploaded int64) blobDescriptor {
	base := r.httpBase(req)
	d := blobDescriptor{URL: base + "/" + hash + blobExt(m.Type), SHA256: hash, Size: m.Size, Type: m.Type, Uploaded: uploaded, Dim: m.Dim}
	if m.ThumbType != "" {
		d.Thumb = base + "/thumb/" + hash
	}
	return d
}

// blobExt is the file extension of a type for descriptor URLs.
func blobExt(typ string) string {
	switch strings.TrimSuffix(typ, "; charset=utf-8") {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "application/pdf":
		return ".pdf"
	case "text/plain":
		return ".txt"
	case "video/mp4":
		return ".mp4"
	case "video/webm":
		return ".webm"
	case "application/zip":
		return ".zip"
	}
	return ".bin"
}

// detectBlobType names a blob's type from its first bytes.
func detectBlobType(head []byte) string {
	t := http.DetectContentType(head)
	if strings.HasPrefix(t, "text/") && strings.Contains(strings.ToLower(string(head)), "<svg") {
		return "image/svg+xml"
	}
	return t
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	b   []byte
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// blobReadable reports whether c may read a blob with these uploads: one
// for the relay needs a member (anyone on an open relay), one for a
// channel someone who may read the channel.
func (r *Relay) blobReadable(c caller, m *blobMeta) bool {
	if len(m.Uploads) == 0 {
		return r.gate(c) == ""
	}
	for _, u := range m.Uploads {
		if u.Channel == "" {
			if r.gate(c) == "" {
				return true
			}
			continue
		}
		if c.pubkey != "" && r.gate(c) == "" && r.channelReadableIn(c, &nostr.Event{}, u.Channel) {
			return true
		}
	}
	return false
}

func (r *Relay) serveBlob(w http.ResponseWriter, req *http.Request, hash string, thumb bool) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		blobError(w, http.StatusMethodNotAllowed, "use GET or HEAD")
		return
	}
	m, err := r.blobs.meta(hash)
	if err != nil {
		blobError(w, http.StatusNotFound, "no such blob")
		return
	}
	c, ev, status, msg := r.blobAuth(req, "get", true)
	if status != 0 {
		blobError(w, status, msg)
		return
	}
	if ev != nil && !namesHash(ev, hash) && !r.namesServer(req, ev) {
		blobError(w, http.StatusUnauthorized, "authorization: no x tag names this blob and no server tag names this relay")
		return
	}
	if !r.blobReadable(c, m) {
		if c.pubkey == "" {
			blobError(w, http.StatusUnauthorized, "this blob needs a kind 24242 get authorization or a NIP-98 token")
			return
		}
		// Not found rather than forbidden would hide that the blob
		// exists, but its hash already proves the asker knows it does.
		blobError(w, http.StatusForbidden, "restricted: not a member of this blob's channel")
		return
	}
	path, typ := r.blobs.path(hash), m.Type
	if thumb {
		if m.ThumbType == "" {
			blobError(w, http.StatusNotFound, "no thumbnail for this blob")
			return
		}
		path, typ = r.blobs.thumbPath(hash), m.ThumbType
	}
	f, err := os.Open(path)
	if err != nil {
		blobError(w, http.StatusNotFound, "no such blob")
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", typ)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	h.Set("Vary", "Authorization")
	if !inlineBlobType(typ) {
		h.Set("Content-Disposition", `attachment; filename="`+hash+blobExt(typ)+`"`)
	}
	st, _ := f.Stat()
	http.ServeContent(w, req, "", st.ModTime(), f)
}

func (r *Relay) serveBlobDelete(w http.ResponseWriter, req *http.Request, hash string) {
	c, ev, status, msg := r.blobAuth(req, "delete", false)
	if status != 0 {
		blobError(w, status, msg)
		return
	}
	if ev == nil {
		blobError(w, http.StatusUnauthorized, "delete needs a kind 24242 authorization (t delete, x the blob's sha256)")
		return
	}
	if !namesHash(ev, hash) {
		blobError(w, http.StatusUnauthorized, "authorization: no x tag names blob "+hash)
		return
	}
	r.blobMu.Lock()
	defer r.blobMu.Unlock()
	m, err := r.blobs.meta(hash)
	if err != nil {
		blobError(w, http.StatusNotFound, "no such blob")
		return
	}
	admin := c.pubkey == r.owner || r.mem.isAdmin(c.pubkey)
	kept := m.Uploads[:0]
	for _, u := range m.Uploads {
		if u.Pubkey != c.pubkey && !admin {
			kept = append(kept, u)
		}
	}
	if len(kept) == len(m.Uploads) {
		blobError(w, http.StatusForbidden, "restricted: only its uploader, the owner or an admin may delete a blob")
		return
	}
	m.Uploads = kept
	if len(kept) > 0 {
		if err := r.blobs.writeMeta(hash, m); err != nil {
			blobError(w, http.StatusInternalServerError, "cannot delete the blob")
			return
		}
	} else {
		for _, p := range []string{r.blobs.metaPath(hash), r.blobs.path(hash), r.blobs.thumbPath(hash)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				r.log.Error("blob delete", "err", err)
			}
		}
	}
	r.log.Info("blob deleted", "sha256", hash, "by", c.pubkey, "gone", len(kept) == 0)
	w.WriteHeader(http.StatusNoContent)
}

func (r *Relay) serveList(w http.ResponseWriter, req *http.Request, pubkey string) {
	if req.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		blobError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	c, _, status, msg := r.blobAuth(req, "list", true)
	if status != 0 {
		blobError(w, status, msg)
		return
	}
	if r.gate(c) != "" {
		blobError(w, http.StatusUnauthorized, "listing blobs needs a kind 24242 list authorization or a NIP-98 token")
		return
	}
	since, _ := strconv.ParseInt(req.URL.Query().Get("since"), 10, 64)
	until, _ := strconv.ParseInt(req.URL.Query().Get("until"), 10, 64)
	names, _ := filepath.Glob(filepath.Join(r.blobs.dir, "*.json"))
	out := []blobDescriptor{}
	for _, n := range names {
		hash := strings.TrimSuffix(filepath.Base(n), ".json")
		if !isHash(hash) {
			continue
		}
		m, err := r.blobs.meta(hash)
		if err != nil || !r.blobReadable(c, m) {
			continue
		}
		for _, u := range m.Uploads {
			if u.Pubkey == pubkey && u.Uploaded >= since && (until == 0 || u.Uploaded <= until) {
				out = append(out, r.descriptor(req, hash, m, u.Uploaded))
				break
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// openBlobs makes the blob directory of cfg.
func openBlobs(cfg Config) (blobStore, error) {
	b := blobStore{dir: cfg.BlobDir, max: cfg.MaxBlobBytes}
	if b.dir == "" {
		b.dir = filepath.Join(cfg.DataDir, "blobs")
	}
	if b.max <= 0 {
		b.max = DefaultMaxBlobBytes
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return blobStore{}, fmt.Errorf("buzz-relay: create blob dir: %w", err)
	}
	// Temporary files an instance killed mid-upload left. Another
	// instance sharing the directory may be writing younger ones.
	left, _ := filepath.Glob(filepath.Join(b.dir, ".*-*"))
	for _, p := range left {
		if fi, err := os.Stat(p); err == nil && time.Since(fi.ModTime()) > staleUpload {
			os.Remove(p)
		}
	}
	return b, nil
}
