package gossip

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// ErrNotEncrypted is returned by SetKeyring on a node started without a
// key: memberlist cannot start encrypting a running pool.
var ErrNotEncrypted = errors.New("gossip: node started without encryption; a keyring needs a restart")

// MaxKeyringKeys bounds the keys of a keyring file.
const MaxKeyringKeys = 64

// ParseKeyring reads a keyring file: one key per line, base64 of 16, 24 or
// 32 bytes (AES-128, -192 or -256); blank lines and lines starting with #
// are ignored. The first key is the primary, which the node encrypts with;
// every key decrypts. Rotating keys across a pool without dropping a node
// takes three steps, each applied to every node before the next:
//
//  1. install: add the new key as a second line;
//  2. switch: make it the first line (every node can already decrypt it);
//  3. remove: delete the old key's line.
func ParseKeyring(data []byte) ([][]byte, error) {
	var keys [][]byte
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			return nil, fmt.Errorf("gossip: keyring line %d: not base64", i+1)
		}
		if l := len(k); l != 16 && l != 24 && l != 32 {
			return nil, fmt.Errorf("gossip: keyring line %d: a key of %d bytes, want 16, 24 or 32", i+1, l)
		}
		for _, prev := range keys {
			if bytes.Equal(prev, k) {
				return nil, fmt.Errorf("gossip: keyring line %d: the key is listed twice", i+1)
			}
		}
		if len(keys) == MaxKeyringKeys {
			return nil, fmt.Errorf("gossip: keyring: more than %d keys", MaxKeyringKeys)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("gossip: keyring: no key")
	}
	return keys, nil
}

// SetKeyring makes keys (primary first, as ParseKeyring returns them) the
// node's keyring: it installs the keys it lacks, makes keys[0] the key it
// encrypts with, and removes the keys not listed. Other nodes are not
// told: each applies its own keyring file.
func (n *Node) SetKeyring(keys [][]byte) error {
	if n.keys == nil {
		return ErrNotEncrypted
	}
	if len(keys) == 0 {
		return errors.New("gossip: keyring: no key")
	}
	for _, k := range keys {
		if err := n.keys.AddKey(k); err != nil {
			return fmt.Errorf("gossip: keyring: %w", err)
		}
	}
	if err := n.keys.UseKey(keys[0]); err != nil {
		return fmt.Errorf("gossip: keyring: %w", err)
	}
	for _, have := range n.keys.GetKeys() {
		keep := false
		for _, k := range keys {
			keep = keep || bytes.Equal(have, k)
		}
		if !keep {
			if err := n.keys.RemoveKey(have); err != nil {
				return fmt.Errorf("gossip: keyring: %w", err)
			}
		}
	}
	return nil
}

// Keyring returns the node's keys, primary first (nil when gossip is not
// encrypted).
func (n *Node) Keyring() [][]byte {
	if n.keys == nil {
		return nil
	}
	primary := n.keys.GetPrimaryKey()
	out := [][]byte{primary}
	for _, k := range n.keys.GetKeys() {
		if !bytes.Equal(k, primary) {
			out = append(out, k)
		}
	}
	return out
}
