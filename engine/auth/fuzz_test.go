package auth

import (
	"sync"
	"testing"

	"github.com/xdg-go/scram"
)

var (
	fuzzUserOnce sync.Once
	fuzzUser     User
)

// FuzzConversation feeds any client messages to both mechanisms' server
// side: what a client sends before it is authenticated must never panic
// the server nor authenticate it without the password.
func FuzzConversation(f *testing.F) {
	fuzzUserOnce.Do(func() {
		creds, err := NewCredentials("user", "secret", nil)
		if err != nil {
			f.Fatal(err)
		}
		fuzzUser = User{User: "user", DB: "test", Credentials: creds}
	})
	// Seeds: a real first message, and a real exchange's final message.
	cl, _ := scram.SHA256.NewClient("user", "wrong", "")
	cc := cl.NewConversation()
	first, _ := cc.Step("")
	f.Add(uint8(1), []byte(first), []byte("c=biws,r=abc,p=AAAA"), []byte(""))
	f.Add(uint8(0), []byte("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"), []byte("c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="), []byte("x"))
	f.Add(uint8(0), []byte("y,a=user,n=user,r=1"), []byte("c=eSxhPXVzZXIs,r=1"), []byte(""))
	f.Add(uint8(1), []byte("n,,n=us=2Cer,r=1,e=x"), []byte(","), []byte("=="))
	f.Fuzz(func(t *testing.T, mech uint8, m1, m2, m3 []byte) {
		name := Mechanisms[int(mech)%len(Mechanisms)]
		conv, err := NewConversation(name, only(fuzzUser), testDecoys)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range [][]byte{m1, m2, m3} {
			if conv.Done() {
				break
			}
			if _, err := conv.Step(m); err != nil {
				break
			}
		}
		// Without the password no client can produce a valid proof: it
		// would have to sign a server nonce it had not seen.
		if conv.Valid() {
			t.Fatalf("%s: authenticated without the password: %q %q", name, m1, m2)
		}
	})
}
