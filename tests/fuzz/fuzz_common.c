#include <string.h>

#include "fuzz.h"

char *fuzz_string(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) abort();
  memcpy(text, data, size);
  text[size] = '\0';
  return text;
}
