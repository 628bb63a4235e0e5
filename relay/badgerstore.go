package relay

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"buzzbox/internal/workspace"

	"github.com/dgraph-io/badger/v4"
	"github.com/fiatjaf/eventstore"
	eventbadger "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"
)

// badgerStore is eventstore's badger backend with our own SaveEvent and
// ReplaceEvent. The backend's save encodes each event into a zeroed buffer
// of 64 KiB plus the event's size and keeps only the used part; at high
// publish rates that waste dominates allocation and GC. Ours writes the
// same bytes from a buffer of the exact size, under the same keys, so the
// backend's QueryEvents, CountEvents and DeleteEvent (promoted from the
// embedded backend) read and delete what we write, and data directories
// stay interchangeable with the plain backend.
//
// Pinned to eventstore v0.16.2 (database version 3) by
// TestBadgerStoreSameBytes, TestBadgerStoreReadByBackend and
// FuzzBadgerStore: a new eventstore version must pass them before use.
//
// Differences from the backend, none of them in what is stored:
//   - events whose id, pubkey or sig is not hex of the right length, or
//     whose kind or created_at is negative, are refused (the backend
//     stores zeros or wrapped numbers, which read back as another event);
//   - ReplaceEvent finds the previous versions through the pubkey+kind
//     index, checking the whole pubkey and, for addressable kinds, the d
//     tag, where the backend asks its query planner (which, for an
//     addressable kind, walks every event carrying the d value in any tag
//     — for a channel, all its messages — and cannot find a d tag that a
//     longer-named tag with the same value kept out of the index).
//
// When the backend's experimental tag-indexing hooks are set, both calls
// are handed to the backend unchanged.
type badgerStore struct {
	*eventbadger.BadgerBackend
}

// Layout of a stored event (eventstore's "hybrid" binary encoding), all
// integers big-endian:
//
//	id [32] pubkey [32] sig [64] created_at u32 kind u16
//	content_len u16 content [content_len]
//	tag_count u16, then per tag: item_count u8, then per item:
//	item_len u16 item [item_len] 0x00
//
// The decoder reads the byte after each item as a separator and ignores
// its value; the encoder always writes 0.
const (
	binIDOffset         = 0
	binPubKeyOffset     = 32
	binSigOffset        = 64
	binCreatedAtOffset  = 128
	binKindOffset       = 132
	binContentLenOffset = 134
	binContentOffset    = 136 // also the size of the fixed header

	binIDLen        = 32
	binPubKeyLen    = 32
	binSigLen       = 64
	binTagCountLen  = 2
	binItemCountLen = 1
	binItemLenLen   = 2
	binItemEndLen   = 1 // the 0x00 after each item

	// Largest values the encoding holds; larger events are refused, as
	// the backend refuses them.
	maxBinCreatedAt = math.MaxUint32
	maxBinKind      = math.MaxUint16
	maxBinContent   = math.MaxUint16 // bytes
	maxBinTags      = math.MaxUint16
	maxBinTagItems  = math.MaxUint8
	maxBinTagItem   = math.MaxUint16 // bytes
)

// Keys of the backend's database. Each event has a raw record under
// rawKey+serial and index keys with empty values that end in its
// created_at (except the id index) and serial.
const (
	keyRaw        byte = 0 // serial → encoded event
	keyCreatedAt  byte = 1 // created_at serial
	keyID         byte = 2 // id[:8] serial
	keyKind       byte = 3 // kind created_at serial
	keyPubKey     byte = 4 // pubkey[:8] created_at serial
	keyPubKeyKind byte = 5 // pubkey[:8] kind created_at serial
	keyTag        byte = 6 // value created_at serial
	keyTag32      byte = 7 // value as 32 bytes [:8] created_at serial
	keyTagAddr    byte = 8 // kind pubkey[:8] d created_at serial

	keyPrefixLen     = 1
	keySerialLen     = 4
	keyCreatedAtLen  = 4
	keyKindLen       = 2
	keyHeadLen       = 8 // bytes of an id, pubkey or 32-byte tag value kept
	keyIndexSuffix   = keyCreatedAtLen + keySerialLen
	indexedTagValue  = 100 // longer tag values are not indexed
	indexedTagName   = 1   // only one-letter tags are indexed
	indexKeysPerTagN = 5   // keys every event has besides its tag keys

	// dedupeLinearMax is the tag count up to which the first tag holding
	// a value is found by scanning; beyond it a map is built once.
	dedupeLinearMax = 32
)

// SaveEvent stores ev unless an event with the same id (by its first 8
// bytes, as the backend checks) is there already, in which case it returns
// eventstore.ErrDupEvent. One badger transaction, as in the backend.
func (s *badgerStore) SaveEvent(ctx context.Context, ev *nostr.Event) error {
	if s.hooked() {
		return s.BadgerBackend.SaveEvent(ctx, ev)
	}
	val, err := encodeEvent(ev)
	if err != nil {
		return err
	}
	return s.Update(func(txn *badger.Txn) error {
		var prefix [keyPrefixLen + keyHeadLen]byte
		prefix[0] = keyID
		copy(prefix[keyPrefixLen:], val[binIDOffset:])
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix[:]})
		it.Seek(prefix[:])
		dup := it.ValidForPrefix(prefix[:])
		it.Close()
		if dup {
			return eventstore.ErrDupEvent
		}
		return s.put(txn, ev, val)
	})
}

// ReplaceEvent stores ev, a replaceable or addressable event, and deletes
// the versions it replaces: same pubkey and kind (and d tag when
// addressable), older, or as old with a greater id. If a version that ev
// does not replace is there, ev is not stored and the result is nil, as in
// the backend. One badger transaction, tried again when it conflicts.
func (s *badgerStore) ReplaceEvent(ctx context.Context, ev *nostr.Event) error {
	if s.hooked() {
		return s.BadgerBackend.ReplaceEvent(ctx, ev)
	}
	val, err := encodeEvent(ev)
	if err != nil {
		return err
	}
	// Replacing reads the pubkey+kind index, so two replaces of one
	// author's kind at once (the relay's own run records and state) can
	// conflict; the one that lost is tried again.
	for range maxReplaceTries - 1 {
		if err = s.replaceOnce(ev, val); !errors.Is(err, badger.ErrConflict) {
			return err
		}
	}
	return s.replaceOnce(ev, val)
}

// replaceOnce is one transaction of ReplaceEvent.
func (s *badgerStore) replaceOnce(ev *nostr.Event, val []byte) error {
	return s.Update(func(txn *badger.Txn) error {
		older, newer, err := versions(txn, ev, val)
		if err != nil {
			return fmt.Errorf("buzz-relay: replace event %s: %w", ev.ID, err)
		}
		for _, v := range older {
			for _, k := range indexKeys(v.ev, v.serial[:]) {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			if err := txn.Delete(rawKey(v.serial[:])); err != nil {
				return err
			}
		}
		if newer {
			return nil
		}
		return s.put(txn, ev, val)
	})
}

// version is a stored event and its serial.
type version struct {
	ev     *nostr.Event
	serial [keySerialLen]byte
}

// versions returns the stored versions ev replaces (val is its encoding)
// and whether one that ev does not replace is there. It walks the
// pubkey+kind index, whose keys hold only 8 bytes of the pubkey, and
// checks the whole pubkey and, for an addressable kind, the d tag.
func versions(txn *badger.Txn, ev *nostr.Event, val []byte) (older []version, newer bool, err error) {
	addressable := nostr.IsAddressableKind(ev.Kind)
	d := ev.Tags.GetD()
	pk := val[binPubKeyOffset : binPubKeyOffset+binPubKeyLen]
	var prefix []byte
	if dFirstKind(ev.Kind) && len(ev.Tags) > 0 && len(ev.Tags[0]) >= 2 && ev.Tags[0][0] == "d" && len(d) > 0 && len(d) <= indexedTagValue {
		// Every version is in the d tag's index: walk it, not every
		// event of the kind and pubkey (thousands of run records).
		t := tagKeyOf(d)
		prefix = make([]byte, t.len())
		t.put(prefix)
	} else {
		prefix = make([]byte, keyPrefixLen+keyHeadLen+keyKindLen)
		prefix[0] = keyPubKeyKind
		copy(prefix[keyPrefixLen:], pk[:keyHeadLen])
		binary.BigEndian.PutUint16(prefix[keyPrefixLen+keyHeadLen:], uint16(ev.Kind))
	}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		var v version
		key := it.Item().Key()
		copy(v.serial[:], key[len(key)-keySerialLen:])
		raw, err := txn.Get(rawKey(v.serial[:]))
		if err != nil {
			return nil, false, fmt.Errorf("read %x: %w", v.serial, err)
		}
		var prev nostr.Event
		var same bool
		err = raw.Value(func(b []byte) error {
			if len(b) < binContentOffset {
				return errBinShort
			}
			if !bytes.Equal(b[binPubKeyOffset:binPubKeyOffset+binPubKeyLen], pk) {
				return nil // another pubkey with the same first 8 bytes
			}
			if err := decodeEvent(b, &prev); err != nil {
				return err
			}
			same = prev.Kind == ev.Kind && (!addressable || prev.Tags.GetD() == d)
			return nil
		})
		if err != nil {
			return nil, false, fmt.Errorf("decode %x: %w", v.serial, err)
		}
		switch {
		case !same:
		case replaces(ev, &prev):
			v.ev = &prev
			older = append(older, v)
		default:
			newer = true
		}
	}
	return older, newer, nil
}

// dFirstKind reports whether every stored version of an addressable kind
// carries its d tag first, so that its value is in the tag index: kinds
// only the relay writes (the write gate refuses them from clients), with
// d first in each (engine.save).
func dFirstKind(kind int) bool { return kind == workspace.KindWorkflowRun }

// hooked reports whether the backend's experimental indexing hooks are
// set; our index keys do not know them.
func (s *badgerStore) hooked() bool {
	return s.SkipIndexingTag != nil || s.IndexLongerTag != nil
}

// put writes val, ev's encoding, under the next serial and ev's index keys.
func (s *badgerStore) put(txn *badger.Txn, ev *nostr.Event, val []byte) error {
	raw := s.Serial() // keyRaw then the serial
	if err := txn.Set(raw, val); err != nil {
		return err
	}
	for _, k := range indexKeys(ev, raw[keyPrefixLen:]) {
		if err := txn.Set(k, nil); err != nil {
			return err
		}
	}
	return nil
}

// replaces reports whether next supersedes prev: newer, or as old with a
// smaller id.
func replaces(next, prev *nostr.Event) bool {
	return prev.CreatedAt < next.CreatedAt || (prev.CreatedAt == next.CreatedAt && prev.ID > next.ID)
}

func rawKey(serial []byte) []byte {
	k := make([]byte, keyPrefixLen+keySerialLen)
	k[0] = keyRaw
	copy(k[keyPrefixLen:], serial)
	return k
}

// encodedLen returns the size of ev's encoding, or why it has none.
func encodedLen(ev *nostr.Event) (int, error) {
	switch {
	case ev.CreatedAt < 0 || ev.CreatedAt > maxBinCreatedAt:
		return 0, fmt.Errorf("buzz-relay: store event %s: created_at %d out of range 0..%d", ev.ID, ev.CreatedAt, maxBinCreatedAt)
	case ev.Kind < 0 || ev.Kind > maxBinKind:
		return 0, fmt.Errorf("buzz-relay: store event %s: kind %d out of range 0..%d", ev.ID, ev.Kind, maxBinKind)
	case len(ev.Content) > maxBinContent:
		return 0, fmt.Errorf("buzz-relay: store event %s: content is %d bytes, max %d", ev.ID, len(ev.Content), maxBinContent)
	case len(ev.Tags) > maxBinTags:
		return 0, fmt.Errorf("buzz-relay: store event %s: %d tags, max %d", ev.ID, len(ev.Tags), maxBinTags)
	}
	n := binContentOffset + len(ev.Content) + binTagCountLen
	for _, tag := range ev.Tags {
		if len(tag) > maxBinTagItems {
			return 0, fmt.Errorf("buzz-relay: store event %s: tag of %d items, max %d", ev.ID, len(tag), maxBinTagItems)
		}
		n += binItemCountLen
		for _, item := range tag {
			if len(item) > maxBinTagItem {
				return 0, fmt.Errorf("buzz-relay: store event %s: tag item of %d bytes, max %d", ev.ID, len(item), maxBinTagItem)
			}
			n += binItemLenLen + len(item) + binItemEndLen
		}
	}
	return n, nil
}

// encodeEvent returns ev in the backend's binary encoding, in a buffer of
// exactly its size.
func encodeEvent(ev *nostr.Event) ([]byte, error) {
	n, err := encodedLen(ev)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, binContentOffset, n)
	for _, f := range []struct {
		name string
		hex  string
		dst  []byte
	}{
		{"id", ev.ID, buf[binIDOffset : binIDOffset+binIDLen]},
		{"pubkey", ev.PubKey, buf[binPubKeyOffset : binPubKeyOffset+binPubKeyLen]},
		{"sig", ev.Sig, buf[binSigOffset : binSigOffset+binSigLen]},
	} {
		if !decodeHex(f.dst, f.hex) {
			return nil, fmt.Errorf("buzz-relay: store event %q: %s is not %d hex digits", ev.ID, f.name, 2*len(f.dst))
		}
	}
	binary.BigEndian.PutUint32(buf[binCreatedAtOffset:], uint32(ev.CreatedAt))
	binary.BigEndian.PutUint16(buf[binKindOffset:], uint16(ev.Kind))
	binary.BigEndian.PutUint16(buf[binContentLenOffset:], uint16(len(ev.Content)))
	buf = append(buf, ev.Content...)
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(ev.Tags)))
	for _, tag := range ev.Tags {
		buf = append(buf, uint8(len(tag)))
		for _, item := range tag {
			buf = binary.BigEndian.AppendUint16(buf, uint16(len(item)))
			buf = append(buf, item...)
			buf = append(buf, 0)
		}
	}
	return buf, nil
}

var errBinShort = errors.New("encoding ends early")

// decodeEvent reads an event in the backend's binary encoding. It is
// stricter than the backend's decoder, which it must agree with on every
// encoding the backend writes: the record must end after the last tag and
// every item separator must be 0.
func decodeEvent(b []byte, ev *nostr.Event) error {
	if len(b) < binContentOffset {
		return errBinShort
	}
	ev.ID = hex.EncodeToString(b[binIDOffset : binIDOffset+binIDLen])
	ev.PubKey = hex.EncodeToString(b[binPubKeyOffset : binPubKeyOffset+binPubKeyLen])
	ev.Sig = hex.EncodeToString(b[binSigOffset : binSigOffset+binSigLen])
	ev.CreatedAt = nostr.Timestamp(binary.BigEndian.Uint32(b[binCreatedAtOffset:]))
	ev.Kind = int(binary.BigEndian.Uint16(b[binKindOffset:]))
	p := binContentOffset
	n := int(binary.BigEndian.Uint16(b[binContentLenOffset:]))
	if len(b)-p < n+binTagCountLen {
		return errBinShort
	}
	ev.Content = string(b[p : p+n])
	p += n
	ntags := int(binary.BigEndian.Uint16(b[p:]))
	p += binTagCountLen
	if len(b)-p < ntags*binItemCountLen {
		return errBinShort
	}
	ev.Tags = make(nostr.Tags, ntags)
	for t := range ev.Tags {
		if len(b)-p < binItemCountLen {
			return errBinShort
		}
		tag := make(nostr.Tag, b[p])
		p += binItemCountLen
		for i := range tag {
			if len(b)-p < binItemLenLen {
				return errBinShort
			}
			n := int(binary.BigEndian.Uint16(b[p:]))
			p += binItemLenLen
			if len(b)-p < n+binItemEndLen {
				return errBinShort
			}
			tag[i] = string(b[p : p+n])
			p += n
			if b[p] != 0 {
				return fmt.Errorf("item separator at %d is %#x, want 0", p, b[p])
			}
			p += binItemEndLen
		}
		ev.Tags[t] = tag
	}
	if p != len(b) {
		return fmt.Errorf("%d bytes after the last tag", len(b)-p)
	}
	return nil
}

// tagKey is the part of a tag index key that depends on the tag value,
// in the form the backend picks for it.
type tagKey struct {
	prefix byte             // keyTag, keyTag32 or keyTagAddr
	kind   uint16           // keyTagAddr: the address's kind
	head   [keyHeadLen]byte // keyTag32: the value's; keyTagAddr: the pubkey's
	rest   string           // keyTag: the value; keyTagAddr: the d part
}

// tagKeyOf picks the form of value's index key as the backend does: an
// address "kind:pubkey:d" (exactly two colons, a decimal kind that fits 16
// bits, a pubkey that decodes to 32 bytes), else a value that decodes to
// 32 bytes, else the value's bytes.
func tagKeyOf(value string) tagKey {
	if k, rest, ok := strings.Cut(value, ":"); ok {
		if pk, d, ok := strings.Cut(rest, ":"); ok && !strings.Contains(d, ":") {
			if b, ok := hexTo32(pk); ok {
				if kind, err := strconv.ParseUint(k, 10, 16); err == nil {
					t := tagKey{prefix: keyTagAddr, kind: uint16(kind), rest: d}
					copy(t.head[:], b[:])
					return t
				}
			}
		}
	}
	if b, ok := hexTo32(value); ok {
		t := tagKey{prefix: keyTag32}
		copy(t.head[:], b[:])
		return t
	}
	return tagKey{prefix: keyTag, rest: value}
}

// len returns the length of the key up to created_at.
func (t *tagKey) len() int {
	switch t.prefix {
	case keyTagAddr:
		return keyPrefixLen + keyKindLen + keyHeadLen + len(t.rest)
	case keyTag32:
		return keyPrefixLen + keyHeadLen
	}
	return keyPrefixLen + len(t.rest)
}

// put writes the key up to created_at into k and returns how much.
func (t *tagKey) put(k []byte) int {
	k[0] = t.prefix
	switch t.prefix {
	case keyTagAddr:
		binary.BigEndian.PutUint16(k[keyPrefixLen:], t.kind)
		copy(k[keyPrefixLen+keyKindLen:], t.head[:])
		copy(k[keyPrefixLen+keyKindLen+keyHeadLen:], t.rest)
	case keyTag32:
		copy(k[keyPrefixLen:], t.head[:])
	default:
		copy(k[keyPrefixLen:], t.rest)
	}
	return t.len()
}

// indexedTags returns the indexes of ev's tags that get an index key, as
// the backend chooses them: a one-letter name, a value of 1 to 100 bytes,
// and no earlier tag of two or more items (whatever its name, indexed or
// not) with the same value.
func indexedTags(tags nostr.Tags) []int {
	var first map[string]int
	if len(tags) > dedupeLinearMax {
		first = make(map[string]int, len(tags))
		for i, t := range tags {
			if len(t) >= 2 {
				if _, ok := first[t[1]]; !ok {
					first[t[1]] = i
				}
			}
		}
	}
	var out []int
	for i, t := range tags {
		if len(t) < 2 || len(t[0]) != indexedTagName || len(t[1]) == 0 || len(t[1]) > indexedTagValue {
			continue
		}
		if first != nil {
			if first[t[1]] != i {
				continue
			}
		} else if earlierValue(tags[:i], t[1]) {
			continue
		}
		out = append(out, i)
	}
	return out
}

func earlierValue(tags nostr.Tags, v string) bool {
	for _, t := range tags {
		if len(t) >= 2 && t[1] == v {
			return true
		}
	}
	return false
}

// indexKeys returns ev's index keys for its serial, the keys the backend
// writes for it and deletes with it, cut from one allocation.
func indexKeys(ev *nostr.Event, serial []byte) [][]byte {
	var id, pk [keyHeadLen]byte
	decodeHex(id[:], ev.ID[:2*keyHeadLen])
	decodeHex(pk[:], ev.PubKey[:2*keyHeadLen])
	ca := uint32(ev.CreatedAt)
	kind := uint16(ev.Kind)

	tagged := indexedTags(ev.Tags)
	tks := make([]tagKey, len(tagged))
	const (
		idLen        = keyPrefixLen + keyHeadLen + keySerialLen
		pubkeyLen    = keyPrefixLen + keyHeadLen + keyIndexSuffix
		kindLen      = keyPrefixLen + keyKindLen + keyIndexSuffix
		pubkeyKindLn = keyPrefixLen + keyHeadLen + keyKindLen + keyIndexSuffix
		createdAtLen = keyPrefixLen + keyIndexSuffix
	)
	size := idLen + pubkeyLen + kindLen + pubkeyKindLn + createdAtLen
	for i, t := range tagged {
		tks[i] = tagKeyOf(ev.Tags[t][1])
		size += tks[i].len() + keyIndexSuffix
	}
	arena := make([]byte, size)
	keys := make([][]byte, 0, indexKeysPerTagN+len(tks))
	next := func(n int) []byte {
		k := arena[:n:n]
		arena = arena[n:]
		keys = append(keys, k)
		return k
	}
	// The order is the backend's, though a transaction does not need it.
	k := next(idLen)
	k[0] = keyID
	copy(k[keyPrefixLen:], id[:])
	copy(k[keyPrefixLen+keyHeadLen:], serial)

	k = next(pubkeyLen)
	k[0] = keyPubKey
	copy(k[keyPrefixLen:], pk[:])
	putSuffix(k[keyPrefixLen+keyHeadLen:], ca, serial)

	k = next(kindLen)
	k[0] = keyKind
	binary.BigEndian.PutUint16(k[keyPrefixLen:], kind)
	putSuffix(k[keyPrefixLen+keyKindLen:], ca, serial)

	k = next(pubkeyKindLn)
	k[0] = keyPubKeyKind
	copy(k[keyPrefixLen:], pk[:])
	binary.BigEndian.PutUint16(k[keyPrefixLen+keyHeadLen:], kind)
	putSuffix(k[keyPrefixLen+keyHeadLen+keyKindLen:], ca, serial)

	for i := range tks {
		k = next(tks[i].len() + keyIndexSuffix)
		putSuffix(k[tks[i].put(k):], ca, serial)
	}

	k = next(createdAtLen)
	k[0] = keyCreatedAt
	putSuffix(k[keyPrefixLen:], ca, serial)
	return keys
}

// putSuffix writes created_at and serial, the end of an index key.
func putSuffix(k []byte, ca uint32, serial []byte) {
	binary.BigEndian.PutUint32(k, ca)
	copy(k[keyCreatedAtLen:], serial)
}

// decodeHex decodes s, which must be exactly 2*len(dst) hex digits (either
// case), into dst.
func decodeHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

// hexTo32 reports whether hex.DecodeString(s) yields exactly 32 bytes,
// and returns them. DecodeString returns the bytes decoded before an
// error, so a value of 64 hex digits followed by one more character, or by
// a pair that is not hex, yields 32 bytes too; the backend indexes such
// values as 32-byte ones, and so must we.
func hexTo32(s string) (b [32]byte, ok bool) {
	if len(s) < 2*len(b) {
		return b, false
	}
	if !decodeHex(b[:], s[:2*len(b)]) {
		return b, false
	}
	if len(s) >= 2*len(b)+2 {
		_, ok1 := unhex(s[2*len(b)])
		_, ok2 := unhex(s[2*len(b)+1])
		if ok1 && ok2 {
			return b, false // a 33rd byte
		}
	}
	return b, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// eventstore's key prefixes (badger/lib.go): the raw event by serial, and
// the id index (prefix, the id's first 8 bytes, the serial).
const (
	badgerRawEventPrefix = 0
	badgerIDIndexPrefix  = 2
	badgerSerialLen      = 4
)

// eventsByPrefix reads the stored events whose ids start with each 8-byte
// prefix (16 hex digits), through the store's own id index (which keys
// events by the same 8 bytes), in the order of prefixes. Prefixes without
// an event are left out; found reports those with one.
func (b *badgerStore) eventsByPrefix(prefixes []string) (evs []*nostr.Event, found map[string]bool, err error) {
	found = make(map[string]bool, len(prefixes))
	err = b.DB.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{}) // keys only
		defer it.Close()
		key := make([]byte, 1+idPrefixLen)
		raw := make([]byte, 1+badgerSerialLen)
		for _, p := range prefixes {
			if len(p) != 2*idPrefixLen {
				return fmt.Errorf("id prefix %q: want %d hex digits", p, 2*idPrefixLen)
			}
			key[0] = badgerIDIndexPrefix
			if _, err := hex.Decode(key[1:], []byte(p)); err != nil {
				return fmt.Errorf("id prefix %q: %w", p, err)
			}
			for it.Seek(key); it.ValidForPrefix(key); it.Next() {
				k := it.Item().Key()
				if len(k) != len(key)+badgerSerialLen {
					continue
				}
				raw[0] = badgerRawEventPrefix
				copy(raw[1:], k[len(key):])
				item, err := txn.Get(raw)
				if errors.Is(err, badger.ErrKeyNotFound) {
					continue
				} else if err != nil {
					return fmt.Errorf("read event of id prefix %s: %w", p, err)
				}
				ev := &nostr.Event{}
				if err := item.Value(func(v []byte) error { return decodeEvent(v, ev) }); err != nil {
					return fmt.Errorf("read event of id prefix %s: %w", p, err)
				}
				found[p] = true
				evs = append(evs, ev)
			}
		}
		return nil
	})
	return evs, found, err
}
