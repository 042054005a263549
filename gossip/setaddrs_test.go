package gossip

import (
	"strings"
	"testing"
)

func TestSetAddrs(t *testing.T) {
	var c Config
	if err := c.SetAddrs("10.0.0.1:7946", "1.2.3.4:8000", "MDEyMzQ1Njc4OWFiY2RlZg=="); err != nil {
		t.Fatal(err)
	}
	if c.BindAddr != "10.0.0.1" || c.BindPort != 7946 || c.AdvertiseAddr != "1.2.3.4" || c.AdvertisePort != 8000 || len(c.SecretKey) != 16 {
		t.Fatalf("got %+v", c)
	}
	// ":port" binds every interface, as Go's listeners read it.
	var all Config
	if err := all.SetAddrs(":7946", "", ""); err != nil || all.BindAddr != "0.0.0.0" || all.BindPort != 7946 {
		t.Fatalf("SetAddrs(\":7946\") = %v, got BindAddr %q BindPort %d, want 0.0.0.0 7946", err, all.BindAddr, all.BindPort)
	}
	for _, tc := range []struct{ bind, adv, key, want string }{
		{"nope", "", "", "bind"},
		{"h:x", "", "", "bad port"},
		{"h:1", "nope", "", "advertise"},
		{"h:1", "a:b", "", "advertise"},
		{"h:1", "", "%%%", "base64"},
	} {
		var c Config
		err := c.SetAddrs(tc.bind, tc.adv, tc.key)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetAddrs(%q, %q, %q) = %v, want an error about %s", tc.bind, tc.adv, tc.key, err, tc.want)
		}
	}
}
