package egress_test

import (
	"errors"
	"fmt"

	"github.com/hookd/hookd/internal/egress"
)

func ExampleCheckURL() {
	allow, err := egress.ParseAllow("127.0.0.1/32")
	if err != nil {
		panic(err)
	}
	for _, u := range []string{
		"https://example.com/hooks",
		"http://127.0.0.1:9000/hooks",
		"http://10.0.0.1/hooks",
		"http://0x7f000001/hooks",
		"ftp://example.com/",
	} {
		err := egress.CheckURL(u, allow)
		fmt.Printf("%-28s blocked=%-5v invalid=%v\n", u,
			errors.Is(err, egress.ErrBlocked), errors.Is(err, egress.ErrInvalidURL))
	}
	// Output:
	// https://example.com/hooks    blocked=false invalid=false
	// http://127.0.0.1:9000/hooks  blocked=false invalid=false
	// http://10.0.0.1/hooks        blocked=true  invalid=false
	// http://0x7f000001/hooks      blocked=true  invalid=false
	// ftp://example.com/           blocked=false invalid=true
}

func ExampleParseAllow() {
	allow, err := egress.ParseAllow("127.0.0.1, ::1, 10.1.2.3/8")
	fmt.Println(allow, err)
	_, err = egress.ParseAllow("10.0.0.0/8,intranet")
	fmt.Println(err)
	// Output:
	// [127.0.0.1/32 ::1/128 10.0.0.0/8] <nil>
	// egress allow-list: bad entry "intranet" (want a CIDR such as 10.0.0.0/8 or an IP address): ParseAddr("intranet"): unable to parse IP
}
