# keys-to-dict.awk — turns `dtsim keys` (markdown) into libFuzzer dictionary
# entries: every section header, key name, section.key (as --set and [sweep]
# write it) and enum choice.  `make fuzz` runs it, so the dictionary follows
# the key table of config/scenario.c.  Written for any POSIX awk (mawk too).
/^### \[/ {
  section = $2; gsub(/[][]/, "", section)
  print "\"[" section "]\""
  next
}
/^\| `/ {
  line = $0
  gsub(/[\\][|]/, "\001", line)   # markdown's escaped | between enum choices
  n = split(line, col, /[|]/)     # col[2] = key, col[3] = type
  key = col[2]; gsub(/[ `]/, "", key)
  print "\"" key "\""
  print "\"" key " = \""
  print "\"" section "." key "\""
  print "\"" section "." key "=\""
  if (index(col[3], "\001") > 0) {
    m = split(col[3], choice, "\001")
    for (i = 1; i <= m; i++) {
      v = choice[i]; gsub(/ /, "", v)
      if (v != "" && !(v in seen)) { seen[v] = 1; print "\"" v "\"" }
    }
  }
}
