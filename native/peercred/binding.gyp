{
  "targets": [
    {
      "target_name": "peercred",
      "sources": ["peercred.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
