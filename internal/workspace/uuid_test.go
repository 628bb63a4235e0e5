package workspace

import "testing"

func TestUUIDShapes(t *testing.T) {
	fresh := NewUUID()
	if fresh[14] != '4' || !(fresh[19] >= '8' && fresh[19] <= '9' || fresh[19] == 'a' || fresh[19] == 'b') {
		t.Errorf("NewUUID() = %s; want version 4, RFC 9562 variant", fresh)
	}
	for _, tc := range []struct {
		s             string
		uuid, channel bool
	}{
		{fresh, true, true},
		{"0f8fad5b-d9cb-469f-a165-70867728950e", true, true},
		{"0F8FAD5B-D9CB-469F-A165-70867728950E", true, false},
		{"0f8fad5b-d9cb-469f-a165-70867728950", false, false},
		{"0f8fad5bxd9cb-469f-a165-70867728950e", false, false},
		{"0f8fad5b-d9cb-469f-a165-70867728950g", false, false},
		{"0f8fad5b-d9cb-469f-a165-70867728950e\n", false, false},
		{"0f8fad5b-d9cb-469f-a165-70867728950é", false, false},
		{"", false, false},
	} {
		if got := IsUUID(tc.s); got != tc.uuid {
			t.Errorf("IsUUID(%q) = %v; want %v", tc.s, got, tc.uuid)
		}
		if got := IsChannelID(tc.s); got != tc.channel {
			t.Errorf("IsChannelID(%q) = %v; want %v", tc.s, got, tc.channel)
		}
	}
}
