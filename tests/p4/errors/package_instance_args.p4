// expect: 7:1: 1 arguments supplied while 0 are expected
// a package instance given to main's package is built with an argument its package does not take: reported at the
// package's declaration, then the instance, as p4c does (its issue803-1.p4: "'package Ingress' ... Originating from")
#include <core.p4>

parser Prs(out bit<8> x);
package Inner<H>();
package Outer<H>(Inner<H> i);
parser my_prs(out bit<8> x) { state start { x = 1; transition accept; } }
Inner<bit<8>>(my_prs()) inner;
Outer<bit<8>>(inner) main;
