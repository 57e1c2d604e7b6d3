typedef int gs_toml_placeholder;
