// expect: 10:1: contains self
// an extern instantiated with itself as its type argument
#include <core.p4>
#include <v1model.p4>

extern Box<T> {
    Box();
    void put(in T v);
}
Box<Box<bit<8>>>() b;
