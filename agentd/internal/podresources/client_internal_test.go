package podresources

import (
	"testing"

	fk "joulie.io/joulie/agentd/internal/podresources/fakekubelet"
)

// A restarted kubelet's socket can look like the old one: a new file may
// get the old one's inode, and its change time may fall in the same
// clock tick. The old connection then fails or works by chance; either
// way the tick gets the new kubelet's answer.
func TestRedialWhenTheNewSocketLooksLikeTheOld(t *testing.T) {
	k := fk.Start(t)
	c := New(k.Socket(), 0)
	defer c.Close()
	if _, err := c.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	k.Crash() // the old connection is dead, the client does not know
	k.SetPods(fk.Pod("ml", "after"))
	k.Restart()
	file, err := c.stat()
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.file = file
	c.mu.Unlock()
	pods, err := c.List(t.Context())
	if err != nil || len(pods) != 1 || pods[0].Name != "after" {
		t.Fatalf("List after an unnoticed restart: %v, %v", pods, err)
	}
}
