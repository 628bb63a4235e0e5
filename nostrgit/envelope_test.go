package nostrgit

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nipgs"
)

func vectorEnvelope(t testing.TB, withOA bool) *nipgs.Envelope {
	t.Helper()
	k, err := nostrkey.ParseSecret(k3)
	if err != nil {
		t.Fatal(err)
	}
	e := &nipgs.Envelope{PK: k.Public(), T: tV}
	if withOA {
		e.OA = &nipgs.OA{Owner: pk1, Conditions: "", Sig: ownerSig}
	}
	h := nipgs.NewHash(e.T, e.OA)
	h.Write([]byte(payloadV))
	sig, err := k.SignAux(h.Sum(nil), [32]byte{})
	if err != nil {
		t.Fatal(err)
	}
	e.Sig = sig
	return e
}

func TestEnvelopeVectors(t *testing.T) {
	h := nipgs.NewHash(tV, nil)
	h.Write([]byte(payloadV))
	if got := hex.EncodeToString(h.Sum(nil)); got != hashV {
		t.Errorf("H = %s; want %s", got, hashV)
	}
	e := vectorEnvelope(t, false)
	if got := hex.EncodeToString(e.Sig[:]); got != sigV {
		t.Errorf("sig = %s; want %s", got, sigV)
	}
	b64 := base64.StdEncoding.EncodeToString(e.JSON())
	if !strings.HasPrefix(b64, "eyJ2IjoxLCJwayI6ImY5MzA4YTAx") || !strings.HasSuffix(b64, "IsInQiOjE3MDAwMDAwMDB9") {
		t.Errorf("envelope base64 = %s", b64)
	}
	want := `{"v":1,"pk":"` + pk3 + `","sig":"` + sigV + `","t":1700000000}`
	if string(e.JSON()) != want {
		t.Errorf("JSON = %s; want %s", e.JSON(), want)
	}
	if got := string(e.Armor()); got != nipgs.ArmorBegin+"\n"+b64+"\n"+nipgs.ArmorEnd+"\n" {
		t.Errorf("Armor = %q", got)
	}

	h = nipgs.NewHash(tV, &nipgs.OA{Owner: pk1, Sig: ownerSig})
	h.Write([]byte(payloadV))
	if got := hex.EncodeToString(h.Sum(nil)); got != hashOAV {
		t.Errorf("H with OA = %s; want %s", got, hashOAV)
	}
	eo := vectorEnvelope(t, true)
	if got := hex.EncodeToString(eo.Sig[:]); got != sigOAV {
		t.Errorf("sig with OA = %s; want %s", got, sigOAV)
	}
	if !strings.HasSuffix(string(eo.JSON()), `,"oa":["`+pk1+`","","`+ownerSig+`"]}`) {
		t.Errorf("JSON with OA = %s", eo.JSON())
	}
}

// armorJSON wraps any JSON text the way the signer does.
func armorJSON(j string) []byte {
	return []byte(nipgs.ArmorBegin + "\n" + base64.StdEncoding.EncodeToString([]byte(j)) + "\n" + nipgs.ArmorEnd + "\n")
}

func TestParseArmor(t *testing.T) {
	good := vectorEnvelope(t, false)
	e, err := nipgs.ParseArmor(good.Armor())
	if err != nil || e.PK != good.PK || e.Sig != good.Sig || e.T != tV || e.OA != nil {
		t.Fatalf("nipgs.ParseArmor(vector) = %+v, %v", e, err)
	}
	eo, err := nipgs.ParseArmor(vectorEnvelope(t, true).Armor())
	if err != nil || eo.OA == nil || eo.OA.Owner != pk1 {
		t.Fatalf("nipgs.ParseArmor(OA vector) = %+v, %v", eo, err)
	}
	j := string(good.JSON())
	sigField := `"sig":"` + sigV + `"`
	bad := map[string][]byte{
		"space after brace": armorJSON("{ " + j[1:]),
		"reordered":         armorJSON(`{"pk":"` + pk3 + `","v":1,` + sigField + `,"t":1700000000}`),
		"v2":                armorJSON(strings.Replace(j, `"v":1`, `"v":2`, 1)),
		"v string":          armorJSON(strings.Replace(j, `"v":1`, `"v":"1"`, 1)),
		"extra key":         armorJSON(strings.TrimSuffix(j, "}") + `,"x":1}`),
		"upper pk":          armorJSON(strings.Replace(j, pk3, strings.ToUpper(pk3), 1)),
		"float t":           armorJSON(strings.Replace(j, "1700000000", "1700000000.0", 1)),
		"big t":             armorJSON(strings.Replace(j, "1700000000", "9999999999", 1)),
		"negative t":        armorJSON(strings.Replace(j, "1700000000", "-1", 1)),
		"leading zero t":    armorJSON(strings.Replace(j, "1700000000", "01700000000", 1)),
		"duplicate pk":      armorJSON(strings.Replace(j, `"v":1,`, `"v":1,"pk":"`+pk3+`",`, 1)),
		"capital key":       armorJSON(strings.Replace(j, `"pk"`, `"PK"`, 1)),
		"trailing":          armorJSON(j + "{}"),
		"crlf":              []byte(strings.ReplaceAll(string(good.Armor()), "\n", "\r\n")),
		"no final newline":  good.Armor()[:len(good.Armor())-1],
		"two newlines":      append(good.Armor(), '\n'),
		"wrong marker":      []byte(strings.Replace(string(good.Armor()), "SIGNED MESSAGE", "PGP SIGNATURE", 1)),
		"not base64":        []byte(nipgs.ArmorBegin + "\n!!!!\n" + nipgs.ArmorEnd + "\n"),
		"pk off curve":      armorJSON(strings.Replace(j, pk3, strings.Repeat("0", 64), 1)),
		"oa self":           armorJSON(strings.TrimSuffix(j, "}") + `,"oa":["` + pk3 + `","","` + ownerSig + `"]}`),
		"oa two":            armorJSON(strings.TrimSuffix(j, "}") + `,"oa":["` + pk1 + `",""]}`),
		"oa bad conditions": armorJSON(strings.TrimSuffix(j, "}") + `,"oa":["` + pk1 + `","x=1","` + ownerSig + `"]}`),
		"not utf8":          armorJSON("{\"v\":1,\"pk\":\"" + pk3 + "\xff\"}"),
		"huge":              armorJSON(strings.TrimSuffix(j, "}") + `,"oa":["` + strings.Repeat("a", 3000) + `"]}`),
	}
	for name, data := range bad {
		if _, err := nipgs.ParseArmor(data); err == nil {
			t.Errorf("nipgs.ParseArmor(%s) succeeded; want error", name)
		}
	}
	// The ERRSIG key is found when the envelope at least names one.
	_, err = nipgs.ParseArmor(armorJSON(strings.Replace(j, `"v":1`, `"v":2`, 1)))
	if ee, ok := err.(*nipgs.MalformedError); !ok || ee.PK != pk3 {
		t.Errorf("nipgs.ParseArmor(v2) error %#v; want PK %s", err, pk3)
	}
}

func FuzzParseArmor(f *testing.F) {
	f.Add(vectorEnvelope(f, false).Armor())
	f.Add(vectorEnvelope(f, true).Armor())
	f.Add(armorJSON(`{"v":1}`))
	f.Add([]byte(nipgs.ArmorBegin + "\n\n" + nipgs.ArmorEnd + "\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := nipgs.ParseArmor(data)
		if err != nil {
			return
		}
		// Round trip: a signature that parses is exactly what we would write.
		if got := e.Armor(); string(got) != string(data) {
			t.Fatalf("parse then armor changed the bytes:\n%q\n%q", data, got)
		}
	})
}

// FuzzParseEnvelopeJSON fuzzes the JSON layer directly, past the base64 armor.
func FuzzParseEnvelopeJSON(f *testing.F) {
	f.Add(string(vectorEnvelope(f, false).JSON()))
	f.Add(string(vectorEnvelope(f, true).JSON()))
	f.Add(`{"v":1,"pk":"","sig":"","t":0}`)
	f.Fuzz(func(t *testing.T, j string) {
		data := armorJSON(j)
		e, err := nipgs.ParseArmor(data)
		if err != nil {
			return
		}
		if string(e.JSON()) != j {
			t.Fatalf("accepted non-canonical envelope %q (canonical %q)", j, e.JSON())
		}
	})
}
