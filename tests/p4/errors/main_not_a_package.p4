// expect: 6:1: main: must be a package instantiation
// the name 'main' declared as something else than a package instance (an extern type)
#include <core.p4>
#include <v1model.p4>

extern main {
    main();
}
