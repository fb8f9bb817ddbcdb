/* Fixture: a valid shared object that is not an integration (no entry function). */
int some_other_library_function(int x);
int some_other_library_function(int x) { return x + 1; }
