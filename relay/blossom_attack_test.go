package relay

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
)

// Attacks on the Blossom routes (blossom.go), against the built binary.

// blobAuth signs a kind 24242 authorization for verb, expiring in exp,
// with an x tag per hash and extra tags, as an Authorization header.
func blobAuthHeader(t *testing.T, k testKey, verb string, exp time.Duration, extra []nostr.Tag, hashes ...string) string {
	t.Helper()
	tags := nostr.Tags{{"t", verb}, {"expiration", strconv.FormatInt(time.Now().Add(exp).Unix(), 10)}}
	for _, h := range hashes {
		tags = append(tags, nostr.Tag{"x", h})
	}
	tags = append(tags, extra...)
	ev := signed(t, k, workspace.KindMediaAuth, verb+" blob", tags...)
	raw, _ := json.Marshal(ev)
	return nip98.Scheme + " " + base64.StdEncoding.EncodeToString(raw)
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// blobDo sends one request with the Authorization header auth (none when
// empty) and returns the status, the headers and the body.
func blobDo(t *testing.T, method, url, auth string, body io.Reader, size int64) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if size >= 0 && body != nil {
		req.ContentLength = size
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, b
}

func pngBytes(t *testing.T, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), 200, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBlossomAttacks(t *testing.T) {
	owner, alice, mallory := newKey(t), newKey(t), newKey(t)
	data := t.TempDir()
	_, wsURL := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", data, "--owner", owner.pk, "--allow", alice.pk)
	base := "http" + strings.TrimPrefix(wsURL, "ws")
	co := login(t, wsURL, owner)
	mustPublish(t, co, signed(t, owner, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"name", "secret"}, nostr.Tag{"visibility", "private"}))
	hA := []nostr.Tag{{"h", chanA}}

	img := pngBytes(t, 800, 400)
	ih := sha(img)
	put := func(k testKey, body []byte, auth string) (int, []byte) {
		t.Helper()
		st, _, b := blobDo(t, "PUT", base+"/upload", auth, bytes.NewReader(body), int64(len(body)))
		return st, b
	}

	// A key that is not a relay member may not upload.
	if st, b := put(mallory, img, blobAuthHeader(t, mallory, "upload", time.Hour, nil, ih)); st != 403 {
		t.Errorf("non-member upload = %d %s; want 403", st, b)
	}
	// Nor may anyone without an authorization, or with a bad one.
	bad := map[string]string{
		"none":       "",
		"expired":    blobAuthHeader(t, owner, "upload", -time.Minute, nil, ih),
		"wrong verb": blobAuthHeader(t, owner, "get", time.Hour, nil, ih),
		"wrong hash": blobAuthHeader(t, owner, "upload", time.Hour, nil, sha([]byte("something else"))),
		"no x":       blobAuthHeader(t, owner, "upload", time.Hour, nil),
		"forged":     forgeAuth(t, blobAuthHeader(t, alice, "upload", time.Hour, nil, ih), owner.pk),
		"not base64": "Nostr %%%",
		"kind 1":     kind1Auth(t, owner, ih),
	}
	future := signed(t, owner, workspace.KindMediaAuth, "u", nostr.Tag{"t", "upload"}, nostr.Tag{"x", ih}, nostr.Tag{"expiration", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)})
	future.CreatedAt = nostr.Timestamp(time.Now().Add(10 * time.Minute).Unix())
	future.Sign(owner.sk)
	raw, _ := json.Marshal(future)
	bad["future created_at"] = nip98.Scheme + " " + base64.StdEncoding.EncodeToString(raw)
	for name, auth := range bad {
		if st, b := put(owner, img, auth); st != 401 {
			t.Errorf("upload with %s auth = %d %s; want 401", name, st, b)
		}
	}
	if st, _, _ := blobDo(t, "HEAD", base+"/"+ih, blobAuthHeader(t, owner, "get", time.Hour, nil, ih), nil, -1); st != 404 {
		t.Errorf("after refused uploads HEAD = %d; want 404 (nothing stored)", st)
	}
	// alice may not put a file in a private channel she is not in.
	if st, b := put(alice, img, blobAuthHeader(t, alice, "upload", time.Hour, hA, ih)); st != 403 {
		t.Errorf("upload to a channel alice is not in = %d %s; want 403", st, b)
	}

	// The owner puts the image in the private channel.
	st, b := put(owner, img, blobAuthHeader(t, owner, "upload", time.Hour, hA, ih))
	if st != 200 {
		t.Fatalf("member upload = %d %s", st, b)
	}
	var d blobDescriptor
	json.Unmarshal(b, &d)
	if d.SHA256 != ih || d.Size != int64(len(img)) || d.Type != "image/png" || d.Dim != "800x400" || d.Thumb != base+"/thumb/"+ih || d.URL != base+"/"+ih+".png" {
		t.Errorf("descriptor = %+v", d)
	}
	get := func(k testKey, path string) (int, http.Header, []byte) {
		t.Helper()
		return blobDo(t, "GET", base+path, blobAuthHeader(t, k, "get", time.Hour, nil, ih), nil, -1)
	}
	for _, p := range []string{"/" + ih, "/" + ih + ".png", "/thumb/" + ih} {
		if st, _, b := get(alice, p); st != 403 {
			t.Errorf("GET %s by a non-member of the channel = %d %s; want 403", p, st, b)
		}
		if st, _, b := get(mallory, p); st != 403 {
			t.Errorf("GET %s by a non-member of the relay = %d %s; want 403", p, st, b)
		}
		if st, _, b := blobDo(t, "GET", base+p, "", nil, -1); st != 401 {
			t.Errorf("GET %s without auth = %d %s; want 401", p, st, b)
		}
	}
	if st, h, b := get(owner, "/"+ih+".jpg"); st != 200 || !bytes.Equal(b, img) || h.Get("Content-Type") != "image/png" {
		t.Errorf("GET by the owner = %d %s, %d bytes; want the PNG whatever the extension", st, h.Get("Content-Type"), len(b))
	}
	st, h, tb := get(owner, "/thumb/"+ih)
	if st != 200 || h.Get("Content-Type") != "image/png" {
		t.Fatalf("thumbnail = %d %s", st, h.Get("Content-Type"))
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(tb)); err != nil || cfg.Width != thumbSide || cfg.Height != thumbSide/2 {
		t.Errorf("thumbnail %+v %v; want %dx%d", cfg, err, thumbSide, thumbSide/2)
	}
	// A get auth for another hash does not open this one.
	if st, _, _ := blobDo(t, "GET", base+"/"+ih, blobAuthHeader(t, owner, "get", time.Hour, nil, sha([]byte("x"))), nil, -1); st != 401 {
		t.Errorf("GET with a get auth naming another blob = %d; want 401", st)
	}

	// Script-capable uploads are served sandboxed, as attachments.
	for name, body := range map[string][]byte{
		"html": []byte("<!DOCTYPE html><html><script>alert(document.domain)</script></html>"),
		"svg":  []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`),
		"xml":  []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`),
	} {
		bh := sha(body)
		if st, b := put(alice, body, blobAuthHeader(t, alice, "upload", time.Hour, nil, bh)); st != 200 {
			t.Fatalf("%s upload = %d %s", name, st, b)
		}
		st, h, _ := blobDo(t, "GET", base+"/"+bh+".html", blobAuthHeader(t, alice, "get", time.Hour, nil, bh), nil, -1)
		if st != 200 || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") ||
			h.Get("X-Content-Type-Options") != "nosniff" || strings.Contains(h.Get("Content-Type"), "html") && name != "html" {
			t.Errorf("%s blob served %d with %v; want a sandboxed attachment", name, st, h)
		}
	}

	// Paths that are not a hash reach no file.
	os.WriteFile(filepath.Join(data, "blobs", "notablob"), []byte("secret"), 0o600)
	key, _ := os.ReadFile(filepath.Join(data, keyFile))
	for _, p := range []string{"/../relay.key", "/%2e%2e/relay.key", "/blobs/notablob", "/notablob", "/" + ih + "/../notablob", "/thumb/..%2fnotablob", "/" + strings.ToUpper(ih), "/" + ih + ".json"} {
		st, _, b := blobDo(t, "GET", base+p, blobAuthHeader(t, owner, "get", time.Hour, nil, ih), nil, -1)
		if st == 200 && (bytes.Contains(b, []byte("secret")) || bytes.Contains(b, []byte(`"uploads"`)) || len(key) > 0 && bytes.Contains(b, key)) {
			t.Errorf("GET %s = %d %q; want no file", p, st, b[:min(len(b), 80)])
		}
	}
	if st, _, _ := blobDo(t, "DELETE", base+"/..%2fnotablob", blobAuthHeader(t, owner, "delete", time.Hour, nil, "..%2fnotablob"), nil, -1); st == 204 {
		t.Errorf("DELETE of a traversal path = 204")
	}
	if _, err := os.Stat(filepath.Join(data, "blobs", "notablob")); err != nil {
		t.Errorf("traversal delete removed a file: %v", err)
	}

	// Listing shows only what the caller may read.
	list := func(k testKey, of string) string {
		t.Helper()
		st, _, b := blobDo(t, "GET", base+"/list/"+of, blobAuthHeader(t, k, "list", time.Hour, nil), nil, -1)
		if st != 200 {
			t.Fatalf("list = %d %s", st, b)
		}
		return string(b)
	}
	if got := list(alice, owner.pk); strings.Contains(got, ih) {
		t.Errorf("alice's listing of the owner's blobs names the private one: %s", got)
	}
	if got := list(owner, owner.pk); !strings.Contains(got, ih) {
		t.Errorf("the owner's own listing lacks the image: %s", got)
	}
	if st, _, _ := blobDo(t, "GET", base+"/list/"+owner.pk, blobAuthHeader(t, mallory, "list", time.Hour, nil), nil, -1); st != 403 {
		t.Errorf("a non-member's listing = %d; want 403", st)
	}

	// Deletion: only the uploader, the owner or an admin.
	if st, _, b := blobDo(t, "DELETE", base+"/"+ih, blobAuthHeader(t, alice, "delete", time.Hour, nil, ih), nil, -1); st != 403 {
		t.Errorf("DELETE by someone else = %d %s; want 403", st, b)
	}
	if st, _, b := blobDo(t, "DELETE", base+"/"+ih, blobAuthHeader(t, owner, "delete", time.Hour, nil, sha([]byte("y"))), nil, -1); st != 401 {
		t.Errorf("DELETE with an x tag for another blob = %d %s; want 401", st, b)
	}
	if st, _, b := blobDo(t, "DELETE", base+"/"+ih, blobAuthHeader(t, owner, "delete", time.Hour, nil, ih), nil, -1); st != 204 {
		t.Errorf("DELETE by the uploader = %d %s; want 204", st, b)
	}
	if st, _, _ := get(owner, "/"+ih); st != 404 {
		t.Errorf("GET after delete = %d; want 404", st)
	}

	// A banned key reads none of the relay's files any more, its own
	// uploads included, and uploads nothing.
	htmlHash := sha([]byte("<!DOCTYPE html><html><script>alert(document.domain)</script></html>"))
	if st, _, _ := blobDo(t, "GET", base+"/"+htmlHash, blobAuthHeader(t, alice, "get", time.Hour, nil, htmlHash), nil, -1); st != 200 {
		t.Fatalf("alice's own upload = %d before her removal", st)
	}
	if st, rep := manage(t, base, owner, "banpubkey", alice.pk, "gone"); st != 200 || rep.Error != "" {
		t.Fatalf("banpubkey = %d %+v", st, rep)
	}
	if st, _, _ := blobDo(t, "GET", base+"/"+htmlHash, blobAuthHeader(t, alice, "get", time.Hour, nil, htmlHash), nil, -1); st != 403 {
		t.Errorf("a banned key's GET of its own upload = %d; want 403", st)
	}
	if st, _ := put(alice, []byte("after"), blobAuthHeader(t, alice, "upload", time.Hour, nil, sha([]byte("after")))); st != 403 {
		t.Errorf("a banned key's upload = %d; want 403", st)
	}
}

// forgeAuth swaps the pubkey of a signed authorization header for pk,
// keeping the signature.
func forgeAuth(t *testing.T, header, pk string) string {
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(header, nip98.Scheme+" "))
	var ev nostr.Event
	json.Unmarshal(raw, &ev)
	ev.PubKey = pk
	ev.ID = ev.GetID()
	raw, _ = json.Marshal(ev)
	return nip98.Scheme + " " + base64.StdEncoding.EncodeToString(raw)
}

func kind1Auth(t *testing.T, k testKey, hash string) string {
	ev := signed(t, k, 1, "u", nostr.Tag{"t", "upload"}, nostr.Tag{"x", hash}, nostr.Tag{"expiration", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)})
	raw, _ := json.Marshal(ev)
	return nip98.Scheme + " " + base64.StdEncoding.EncodeToString(raw)
}

// vmHWM reads the peak resident set of process pid, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// randomBlob is n bytes of seeded noise, read as a stream.
func randomBlob(seed uint64, n int64) io.Reader {
	var key [32]byte
	key[0] = byte(seed)
	return io.LimitReader(rand.NewChaCha8(key), n)
}

// maxBlobRSSGrowth is issue 27's bound on the relay's memory while it
// takes a 40 MB upload.
const maxBlobRSSGrowth = 64 << 20

func TestBlossomUploadLimits(t *testing.T) {
	owner := newKey(t)
	data := t.TempDir()
	cmd, wsURL := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", data, "--owner", owner.pk)
	base := "http" + strings.TrimPrefix(wsURL, "ws")
	pid := cmd.Process.Pid

	const size = 40 << 20
	h := sha256.New()
	io.Copy(h, randomBlob(1, size))
	hash := hex.EncodeToString(h.Sum(nil))
	before := vmHWM(t, pid)
	began := time.Now()
	st, _, b := blobDo(t, "PUT", base+"/upload", blobAuthHeader(t, owner, "upload", time.Hour, nil, hash), randomBlob(1, size), size)
	took := time.Since(began)
	after := vmHWM(t, pid)
	if st != 200 {
		t.Fatalf("40 MB upload = %d %s", st, b)
	}
	t.Logf("40 MB upload in %s (%.0f MB/s); relay VmHWM %d MB → %d MB", took, float64(size>>20)/took.Seconds(), before>>20, after>>20)
	if after-before > maxBlobRSSGrowth {
		t.Errorf("relay peak RSS grew %d MB during a 40 MB upload; want ≤ %d MB", (after-before)>>20, maxBlobRSSGrowth>>20)
	}
	if fi, err := os.Stat(filepath.Join(data, "blobs", hash)); err != nil || fi.Size() != size {
		t.Errorf("stored blob: %v %v", fi, err)
	}

	// BUD-06's preflight says so before any byte is sent.
	check := func(length, sha, auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(testCtx(t), "HEAD", base+"/upload", nil)
		req.Header.Set("X-Content-Length", length)
		req.Header.Set("X-SHA-256", sha)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-Reason")
	}
	okAuth := blobAuthHeader(t, owner, "upload", time.Hour, nil, hash)
	if st, why := check("62914560", hash, okAuth); st != 413 || !strings.Contains(why, "50 MB") {
		t.Errorf("HEAD /upload of 60 MB = %d %q; want 413 naming the limit", st, why)
	}
	if st, _ := check("1000", hash, okAuth); st != 200 {
		t.Errorf("HEAD /upload of 1000 bytes = %d; want 200", st)
	}
	if st, _ := check("1000", hash, ""); st != 401 {
		t.Errorf("HEAD /upload without auth = %d; want 401", st)
	}
	if st, _ := check("1000", sha([]byte("other")), okAuth); st != 401 {
		t.Errorf("HEAD /upload for a hash the auth does not name = %d; want 401", st)
	}
	if st, _ := check("", hash, okAuth); st != 411 {
		t.Errorf("HEAD /upload without X-Content-Length = %d; want 411", st)
	}

	// 60 MB: refused from its Content-Length, and without one mid-stream.
	const big = 60 << 20
	for _, length := range []int64{big, -1} {
		auth := blobAuthHeader(t, owner, "upload", time.Hour, nil, hash)
		var body io.Reader = randomBlob(2, big)
		if length < 0 {
			body = io.MultiReader(body) // hides the size: chunked
		}
		st, hd, b := blobDo(t, "PUT", base+"/upload", auth, body, length)
		if st != 413 || !strings.Contains(string(b), "50 MB") || !strings.Contains(hd.Get("X-Reason"), "50 MB") {
			t.Errorf("60 MB upload (Content-Length %d) = %d %s; want 413 naming the 50 MB limit", length, st, b)
		}
	}
	grown := vmHWM(t, pid)
	if grown-before > maxBlobRSSGrowth {
		t.Errorf("relay peak RSS grew %d MB after refusing 60 MB uploads; want ≤ %d MB", (grown-before)>>20, maxBlobRSSGrowth>>20)
	}
	left, _ := filepath.Glob(filepath.Join(data, "blobs", ".upload-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestBlossomSharedBlobDir: two relays on one --blob-dir serve each
// other's uploads.
func TestBlossomSharedBlobDir(t *testing.T) {
	owner := newKey(t)
	dir := t.TempDir()
	a := startRelay(t, Config{Owner: owner.pk, BlobDir: dir})
	b := startRelay(t, Config{Owner: owner.pk, BlobDir: dir})
	body := []byte("shared between instances")
	h := sha(body)
	if st, _, got := blobDo(t, "PUT", a.HTTPURL()+"/upload", blobAuthHeader(t, owner, "upload", time.Hour, nil, h), bytes.NewReader(body), int64(len(body))); st != 200 {
		t.Fatalf("upload through a = %d %s", st, got)
	}
	if st, _, got := blobDo(t, "GET", b.HTTPURL()+"/"+h, blobAuthHeader(t, owner, "get", time.Hour, nil, h), nil, -1); st != 200 || !bytes.Equal(got, body) {
		t.Errorf("GET through b = %d %q; want the blob uploaded through a", st, got)
	}
}
