"""Reports: accuracy and SHD tables, markdown with graphs drawn, plots."""
