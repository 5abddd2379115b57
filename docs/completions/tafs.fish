# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_tafs_global_optspecs
    string join \n v/verbose h/help V/version
end

function __fish_tafs_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_tafs_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_tafs_using_subcommand
    set -l cmd (__fish_tafs_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c tafs -n "__fish_tafs_needs_command" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_needs_command" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_needs_command" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "gaf" -d 'GAF sprite animations: list, export, dump, build, palette, roundtrip'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "taf" -d 'TA: Kingdoms .taf sprites (paletted or truecolor ARGB4444/ARGB1555): the `gaf` commands under kbot\'s name'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "tnt" -d 'TNT maps: describe, minimap, heightmap, image, features, lint, unpack, pack, preview'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "pcx" -d 'PCX pictures (unit pictures, GUI panels): describe, convert, dump, build'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "pal" -d 'Palettes (.pal, TA: Kingdoms palette .pcx): dump, build, gpl'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "3do" -d '3DO models (read-only): describe, dump (OBJ + MTL, textures, pieces.csv, preview.png)'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "roundtrip" -d 'Check that every rebuildable asset (GAF, TNT, PCX, PAL) under the given paths rebuilds from its unedited view to identical bytes'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "hpi" -d 'HPI archives (.hpi .ufo .ccx .gp3 .gpf, TA: Kingdoms .hpi): list, info, extract, pack'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "demo" -d 'Write a small game folder to try tafs on (sprites, a map, a unit picture, a palette, a model)'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "mount" -d 'Mount a game folder: every .gaf/.tnt/.pcx/.pal/.3do appears as a directory of editable files'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "umount" -d 'Unmount a tafs mount'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "status" -d 'Write-back status of a mount: staged, pending, failed and conflicting edits (with `mount --merged --into`: also what the mod overrides and adds)'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "history" -d 'Versions of a binary kept by write-back (newest first)'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "restore" -d 'Put back a version of a binary kept by write-back'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "which" -d 'Which source (loose file or archive) a path of the merged game view comes from'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "diff" -d 'What the mod of a `mount --merged --into` changes: its files against what they shadow'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "completions" -d 'Shell completions (bash, zsh, fish) of every command, on standard output'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "man" -d 'Man pages of tafs and every subcommand'
complete -c tafs -n "__fish_tafs_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "list" -d 'List sequences, frame counts, loop flags and durations'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "export" -d 'Export one sequence as an animated PNG (APNG) or GIF'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "dump" -d 'Write the exploded view: one folder per sequence with CSVs and indexed PNGs (RGBA PNGs for truecolor frames)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "build" -d 'Rebuild a GAF from a dump folder'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "sample" -d 'Write the crate\'s sample GAF (RLE, raw and composite frames) to try the other commands on'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "palette" -d 'The GIMP palette (.gpl) of the palette the GAF resolves to (the one its frames are drawn with), printed or written to --target'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "roundtrip" -d 'Check that decode → encode and dump → build keep what the game reads, for every GAF under the given paths'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from list" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from export" -l format -d 'Output format' -r -f -a "png\t'PNG (APNG for animations)'
gif\t'GIF'"
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from export" -l sequence -d 'Sequence number (see `list`)' -r
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from export" -s t -l target -d 'Output file' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from export" -l palette -d 'Palette file (.pal or .pcx) instead of the one resolved from the game folder' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from export" -l transparency -d 'Transparency: game (the game\'s rule), heuristic (TA: Kingdoms corner guess, raw frames only), none, or a palette index' -r
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from export" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from export" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from dump" -s t -l target -d 'Output folder (created)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from dump" -l format -d 'Image format of the frame files (build reads either)' -r -f -a "png\t'PNG (APNG for animations)'
gif\t'GIF'"
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from dump" -l palette -d 'Palette file (.pal or .pcx) instead of the one resolved from the game folder' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from dump" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from dump" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from dump" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from build" -s t -l target -d 'Output GAF (written atomically; nothing is written on error)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from build" -l palette -d 'Palette file images are mapped to (default: resolved for the target)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from build" -l storage -d 'Frame storage' -r -f -a "auto\t'As frames.csv says; frames without a value are compressed, except in textures/*.gaf and anims/vismasks.gaf, which are always raw'
raw\t'Every frame raw'
compressed\t'Every frame RLE'"
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from build" -l base -d 'The original GAF: frames equal to its frames keep their stored bytes' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from build" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from build" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from build" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from sample" -s t -l target -d 'Output GAF' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from sample" -l texture -d 'The sample texture GAF (raw frames) instead'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from sample" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from sample" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from sample" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from palette" -s t -l target -d 'Output .gpl (default: standard output)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from palette" -l palette -d 'Palette file (.pal or .pcx) instead of the one resolved from the game folder' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from palette" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from palette" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from palette" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from roundtrip" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from roundtrip" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from roundtrip" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from help" -f -a "list" -d 'List sequences, frame counts, loop flags and durations'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from help" -f -a "export" -d 'Export one sequence as an animated PNG (APNG) or GIF'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from help" -f -a "dump" -d 'Write the exploded view: one folder per sequence with CSVs and indexed PNGs (RGBA PNGs for truecolor frames)'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from help" -f -a "build" -d 'Rebuild a GAF from a dump folder'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from help" -f -a "sample" -d 'Write the crate\'s sample GAF (RLE, raw and composite frames) to try the other commands on'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from help" -f -a "palette" -d 'The GIMP palette (.gpl) of the palette the GAF resolves to (the one its frames are drawn with), printed or written to --target'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from help" -f -a "roundtrip" -d 'Check that decode → encode and dump → build keep what the game reads, for every GAF under the given paths'
complete -c tafs -n "__fish_tafs_using_subcommand gaf; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "list" -d 'List sequences, frame counts, loop flags and durations'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "export" -d 'Export one sequence as an animated PNG (APNG) or GIF'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "dump" -d 'Write the exploded view: one folder per sequence with CSVs and indexed PNGs (RGBA PNGs for truecolor frames)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "build" -d 'Rebuild a GAF from a dump folder'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "sample" -d 'Write the crate\'s sample GAF (RLE, raw and composite frames) to try the other commands on'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "palette" -d 'The GIMP palette (.gpl) of the palette the GAF resolves to (the one its frames are drawn with), printed or written to --target'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "roundtrip" -d 'Check that decode → encode and dump → build keep what the game reads, for every GAF under the given paths'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and not __fish_seen_subcommand_from list export dump build sample palette roundtrip help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from list" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from export" -l format -d 'Output format' -r -f -a "png\t'PNG (APNG for animations)'
gif\t'GIF'"
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from export" -l sequence -d 'Sequence number (see `list`)' -r
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from export" -s t -l target -d 'Output file' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from export" -l palette -d 'Palette file (.pal or .pcx) instead of the one resolved from the game folder' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from export" -l transparency -d 'Transparency: game (the game\'s rule), heuristic (TA: Kingdoms corner guess, raw frames only), none, or a palette index' -r
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from export" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from export" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from dump" -s t -l target -d 'Output folder (created)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from dump" -l format -d 'Image format of the frame files (build reads either)' -r -f -a "png\t'PNG (APNG for animations)'
gif\t'GIF'"
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from dump" -l palette -d 'Palette file (.pal or .pcx) instead of the one resolved from the game folder' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from dump" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from dump" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from dump" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from build" -s t -l target -d 'Output GAF (written atomically; nothing is written on error)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from build" -l palette -d 'Palette file images are mapped to (default: resolved for the target)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from build" -l storage -d 'Frame storage' -r -f -a "auto\t'As frames.csv says; frames without a value are compressed, except in textures/*.gaf and anims/vismasks.gaf, which are always raw'
raw\t'Every frame raw'
compressed\t'Every frame RLE'"
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from build" -l base -d 'The original GAF: frames equal to its frames keep their stored bytes' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from build" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from build" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from build" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from sample" -s t -l target -d 'Output GAF' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from sample" -l texture -d 'The sample texture GAF (raw frames) instead'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from sample" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from sample" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from sample" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from palette" -s t -l target -d 'Output .gpl (default: standard output)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from palette" -l palette -d 'Palette file (.pal or .pcx) instead of the one resolved from the game folder' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from palette" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from palette" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from palette" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from roundtrip" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from roundtrip" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from roundtrip" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from help" -f -a "list" -d 'List sequences, frame counts, loop flags and durations'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from help" -f -a "export" -d 'Export one sequence as an animated PNG (APNG) or GIF'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from help" -f -a "dump" -d 'Write the exploded view: one folder per sequence with CSVs and indexed PNGs (RGBA PNGs for truecolor frames)'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from help" -f -a "build" -d 'Rebuild a GAF from a dump folder'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from help" -f -a "sample" -d 'Write the crate\'s sample GAF (RLE, raw and composite frames) to try the other commands on'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from help" -f -a "palette" -d 'The GIMP palette (.gpl) of the palette the GAF resolves to (the one its frames are drawn with), printed or written to --target'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from help" -f -a "roundtrip" -d 'Check that decode → encode and dump → build keep what the game reads, for every GAF under the given paths'
complete -c tafs -n "__fish_tafs_using_subcommand taf; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -f -a "describe" -d 'Header, tiles, features, minimap, pads, elevation statistics, top features'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -f -a "minimap" -d 'Write the embedded minimap as an indexed PNG'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -f -a "heightmap" -d 'Write the elevation grid as an 8-bit grey PNG (one pixel per 16×16 cell)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -f -a "image" -d 'Write the raw tile mosaic as an indexed PNG (streamed)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -f -a "features" -d 'Print the feature table and every placement as JSON'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -f -a "lint" -d 'Check maps: bad-tile-index, unresolved-feature, minimap-flag, minimap-size, duplicate-tiles, unused-tiles'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -f -a "unpack" -d 'Explode a map into map.png, heightmap.png, minimap.png, tiles/, tilemap.csv, features.csv and metadata.json'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -f -a "pack" -d 'Rebuild a map from an unpacked directory (written atomically; nothing on error)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -f -a "preview" -d 'Render the map with feature sprites and numbered start positions (PNG or JPG)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -f -a "sample" -d 'Write the crate\'s sample map (16×16 tiles: grass, lake, rocks, paths, placed features) to try the other commands on'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and not __fish_seen_subcommand_from describe minimap heightmap image features lint unpack pack preview sample help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from describe" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from describe" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from describe" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from minimap" -s t -l target -d 'Output PNG' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from minimap" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from minimap" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from minimap" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from heightmap" -s t -l target -d 'Output PNG' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from heightmap" -l normalize -d 'Stretch the heights found to 0..255'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from heightmap" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from heightmap" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from heightmap" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from image" -s t -l target -d 'Output PNG' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from image" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from image" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from image" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from features" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from features" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from features" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from lint" -l game-dir -d 'Game folder whose features/**/*.tdf resolve feature names (default: found by walking up from each map)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from lint" -l strict -d 'Exit with status 1 when any warning fires'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from lint" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from lint" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from lint" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from unpack" -s t -l target -d 'Output directory (created if missing)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from unpack" -l clean -d 'Leave the lossless data (raw name buffers, pad bytes, layout) out of metadata.json'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from unpack" -l lossless -d 'Accepted for kbot users: the lossless form is the default'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from unpack" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from unpack" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from unpack" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from pack" -s t -l target -d 'Output map' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from pack" -l prune -d 'Drop tiles no cell uses'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from pack" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from pack" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from pack" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from preview" -s t -l target -d 'Output image: .png or .jpg/.jpeg' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from preview" -l game-dir -d 'Game folder with features/ and anims/ (default: found by walking up from the map)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from preview" -l max-size -d 'Longest side of the output in pixels; larger maps are scaled down by a whole factor' -r
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from preview" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from preview" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from preview" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from sample" -s t -l target -d 'Output map' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from sample" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from sample" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from sample" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from help" -f -a "describe" -d 'Header, tiles, features, minimap, pads, elevation statistics, top features'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from help" -f -a "minimap" -d 'Write the embedded minimap as an indexed PNG'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from help" -f -a "heightmap" -d 'Write the elevation grid as an 8-bit grey PNG (one pixel per 16×16 cell)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from help" -f -a "image" -d 'Write the raw tile mosaic as an indexed PNG (streamed)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from help" -f -a "features" -d 'Print the feature table and every placement as JSON'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from help" -f -a "lint" -d 'Check maps: bad-tile-index, unresolved-feature, minimap-flag, minimap-size, duplicate-tiles, unused-tiles'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from help" -f -a "unpack" -d 'Explode a map into map.png, heightmap.png, minimap.png, tiles/, tilemap.csv, features.csv and metadata.json'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from help" -f -a "pack" -d 'Rebuild a map from an unpacked directory (written atomically; nothing on error)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from help" -f -a "preview" -d 'Render the map with feature sprites and numbered start positions (PNG or JPG)'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from help" -f -a "sample" -d 'Write the crate\'s sample map (16×16 tiles: grass, lake, rocks, paths, placed features) to try the other commands on'
complete -c tafs -n "__fish_tafs_using_subcommand tnt; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and not __fish_seen_subcommand_from describe convert dump build help" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and not __fish_seen_subcommand_from describe convert dump build help" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and not __fish_seen_subcommand_from describe convert dump build help" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and not __fish_seen_subcommand_from describe convert dump build help" -f -a "describe" -d 'Size, layout, header fields, palette and how TA draws the file'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and not __fish_seen_subcommand_from describe convert dump build help" -f -a "convert" -d 'PCX → PNG (indexed with the PCX\'s palette) or PNG → PCX (by the target\'s extension)'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and not __fish_seen_subcommand_from describe convert dump build help" -f -a "dump" -d 'Write the exploded view (image.png + metadata.json; swatch.png, palette.gpl and palette.csv for a 1×1 palette carrier), as the mount shows it'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and not __fish_seen_subcommand_from describe convert dump build help" -f -a "build" -d 'Rebuild a PCX from a dump folder'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and not __fish_seen_subcommand_from describe convert dump build help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from describe" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from describe" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from describe" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from convert" -s t -l target -d 'Output (.png or .pcx; written atomically)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from convert" -l palette -d 'PNG → PCX: the palette (.pal or .pcx) the picture is mapped to (default: an indexed PNG\'s own palette; else the built-in TA palette)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from convert" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from convert" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from convert" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from dump" -s t -l target -d 'Output folder (created)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from dump" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from dump" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from dump" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from build" -s t -l target -d 'Output PCX (written atomically; nothing is written on error)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from build" -l base -d 'The original PCX: unchanged pixels keep their palette index (required for a palette carrier, whose picture and header are kept)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from build" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from build" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from build" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from help" -f -a "describe" -d 'Size, layout, header fields, palette and how TA draws the file'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from help" -f -a "convert" -d 'PCX → PNG (indexed with the PCX\'s palette) or PNG → PCX (by the target\'s extension)'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from help" -f -a "dump" -d 'Write the exploded view (image.png + metadata.json; swatch.png, palette.gpl and palette.csv for a 1×1 palette carrier), as the mount shows it'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from help" -f -a "build" -d 'Rebuild a PCX from a dump folder'
complete -c tafs -n "__fish_tafs_using_subcommand pcx; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and not __fish_seen_subcommand_from dump build gpl help" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and not __fish_seen_subcommand_from dump build gpl help" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and not __fish_seen_subcommand_from dump build gpl help" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and not __fish_seen_subcommand_from dump build gpl help" -f -a "dump" -d 'Write the exploded view of a .pal or palette .pcx: swatch.png, palette.gpl, palette.csv'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and not __fish_seen_subcommand_from dump build gpl help" -f -a "build" -d 'Rebuild a palette file from a dump folder: palette.csv decides; an edited swatch.png is taken with --base (which tells which of the two was edited)'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and not __fish_seen_subcommand_from dump build gpl help" -f -a "gpl" -d 'The GIMP palette (.gpl) of a .pal or .pcx, printed or written to --target'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and not __fish_seen_subcommand_from dump build gpl help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from dump" -s t -l target -d 'Output folder (created)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from dump" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from dump" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from dump" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from build" -s t -l target -d 'Output .pal or .pcx (written atomically)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from build" -l base -d 'The original file (required for a .pcx; a .pal keeps the bytes after its 1,024)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from build" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from build" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from build" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from gpl" -s t -l target -d 'Output .gpl (default: standard output)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from gpl" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from gpl" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from gpl" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from help" -f -a "dump" -d 'Write the exploded view of a .pal or palette .pcx: swatch.png, palette.gpl, palette.csv'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from help" -f -a "build" -d 'Rebuild a palette file from a dump folder: palette.csv decides; an edited swatch.png is taken with --base (which tells which of the two was edited)'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from help" -f -a "gpl" -d 'The GIMP palette (.gpl) of a .pal or .pcx, printed or written to --target'
complete -c tafs -n "__fish_tafs_using_subcommand pal; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and not __fish_seen_subcommand_from describe dump help" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and not __fish_seen_subcommand_from describe dump help" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and not __fish_seen_subcommand_from describe dump help" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and not __fish_seen_subcommand_from describe dump help" -f -a "describe" -d 'Pieces (hierarchy, offsets, vertex and primitive counts) and textures found or missing'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and not __fish_seen_subcommand_from describe dump help" -f -a "dump" -d 'Write model.obj, model.mtl, pieces.csv, preview.png and textures/*.png, as the mount shows them (textures from the game folder\'s textures/*.gaf, colours from its palette)'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and not __fish_seen_subcommand_from describe dump help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and __fish_seen_subcommand_from describe" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and __fish_seen_subcommand_from describe" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and __fish_seen_subcommand_from describe" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and __fish_seen_subcommand_from dump" -s t -l target -d 'Output folder (created)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and __fish_seen_subcommand_from dump" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and __fish_seen_subcommand_from dump" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and __fish_seen_subcommand_from dump" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and __fish_seen_subcommand_from help" -f -a "describe" -d 'Pieces (hierarchy, offsets, vertex and primitive counts) and textures found or missing'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and __fish_seen_subcommand_from help" -f -a "dump" -d 'Write model.obj, model.mtl, pieces.csv, preview.png and textures/*.png, as the mount shows them (textures from the game folder\'s textures/*.gaf, colours from its palette)'
complete -c tafs -n "__fish_tafs_using_subcommand 3do; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand roundtrip" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand roundtrip" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand roundtrip" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and not __fish_seen_subcommand_from list info extract pack help" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and not __fish_seen_subcommand_from list info extract pack help" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and not __fish_seen_subcommand_from list info extract pack help" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and not __fish_seen_subcommand_from list info extract pack help" -f -a "list" -d 'List folders and files with sizes, compression and ratio (no decompression). Every byte of a member name outside printable ASCII is printed `\\xNN` and a backslash `\\\\`, so control characters in a name never reach the terminal; `--raw` prints the names\' bytes as stored'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and not __fish_seen_subcommand_from list info extract pack help" -f -a "info" -d 'Header facts: version, key, counts, sizes, trailer'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and not __fish_seen_subcommand_from list info extract pack help" -f -a "extract" -d 'Extract members into a folder (names sanitised; nothing is written outside it)'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and not __fish_seen_subcommand_from list info extract pack help" -f -a "pack" -d 'Pack a folder into an archive (written atomically)'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and not __fish_seen_subcommand_from list info extract pack help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from list" -l raw -d 'Print member names as their raw bytes, unescaped'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from list" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from info" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from info" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from info" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from extract" -s t -l target -d 'Target folder (created)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from extract" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from extract" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from extract" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from pack" -s t -l target -d 'The archive to write' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from pack" -l format -d 'Archive version: v1 (TA) or v2 (TA: Kingdoms)' -r -f -a "v1\t'Total Annihilation'
v2\t'TA: Kingdoms'"
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from pack" -l method -d 'Compression of the members' -r -f -a "zlib\t'zlib (HPIPack\'s default; needs TA 3.x / Core Contingency)'
lz77\t'TA\'s LZ77'
none\t'Stored raw'"
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from pack" -l key -d 'Version 1 header key, 0..=255, decimal or 0x-hex (0 = no outer cipher; TA\'s own LZ77 archives use 0x7D)' -r
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from pack" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from pack" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from pack" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from help" -f -a "list" -d 'List folders and files with sizes, compression and ratio (no decompression). Every byte of a member name outside printable ASCII is printed `\\xNN` and a backslash `\\\\`, so control characters in a name never reach the terminal; `--raw` prints the names\' bytes as stored'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from help" -f -a "info" -d 'Header facts: version, key, counts, sizes, trailer'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from help" -f -a "extract" -d 'Extract members into a folder (names sanitised; nothing is written outside it)'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from help" -f -a "pack" -d 'Pack a folder into an archive (written atomically)'
complete -c tafs -n "__fish_tafs_using_subcommand hpi; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand demo" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand demo" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand demo" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l log -d 'Log file of the background process (default: logs are discarded)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand mount" -s o -d 'Mount options: allow_other, allow_root, ro, rw, [no]atime, [no]exec, [a]sync, dirsync; anything else goes to the kernel as is' -r
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l uid -d 'Owner shown for every file' -r
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l gid -d 'Group shown for every file' -r
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l cache-size -d 'Memory for generated files (e.g. 256M, 1G)' -r
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l max-member-size -d 'Largest archive member the mount decompresses (bigger ones are listed, and answer EIO)' -r
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l ttl -d 'Seconds the kernel may cache names and attributes when GAME_DIR is not watched (while it is, the kernel caches until a change is seen)' -r
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l threads -d 'Threads serving requests (at least 2)' -r
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l state-dir -d 'Where write-back keeps staged files and history (default: $XDG_STATE_HOME/tafs or ~/.local/state/tafs)' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l operation-gap -d 'Saves of one asset less than this many seconds apart are one operation, whose commits keep one version in the history (the binary before the operation)' -r
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l archive-commit-delay -d 'An archive\'s plain-member saves, deletions and folders commit together once no such save came for this many seconds (at the latest 5 s after the first; 0: each at once); an fsync commits at once' -r
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l priority -d 'With --merged: which source wins, highest first: `loose`, extensions (gp3 gpf ccx ufo hpi) and archive names, comma-separated; put in front of the default loose,gp3,gpf,ccx,ufo,hpi (archives of one rank: by name, A first)' -r
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l into -d 'With --merged: make the view writable, every change landing in TARGET (a folder, or an archive .hpi .ufo .ccx .gp3 .gpf; created when missing), which wins over every other source. A relative TARGET is relative to GAME_DIR' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l demo -d 'Mount a sample game folder the crate writes itself (in a temporary folder)'
complete -c tafs -n "__fish_tafs_using_subcommand mount" -s d -l daemon -d 'Detach: return once the mount is live (or failed), serve in the background'
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l ro -d 'Refuse every write (EROFS)'
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l no-watch -d 'Do not watch GAME_DIR (inotify): poll it, every request checking the binary and the kernel caching for --ttl only'
complete -c tafs -n "__fish_tafs_using_subcommand mount" -l merged -d 'Show the game as the game sees it (read-only unless --into): loose files and the members of every archive at the top of GAME_DIR overlaid, folders merged ignoring case'
complete -c tafs -n "__fish_tafs_using_subcommand mount" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand mount" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand mount" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand umount" -s l -l lazy -d 'Detach now even if busy; the mount goes away when no longer used'
complete -c tafs -n "__fish_tafs_using_subcommand umount" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand umount" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand umount" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand status" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand status" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand status" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand history" -l state-dir -d 'The state directory the mount used' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand history" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand history" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand history" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand restore" -l state-dir -d 'The state directory the mount used' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand restore" -l original -d 'Restore the original: the oldest version kept, the binary as it was before its first commit (never evicted from the history)'
complete -c tafs -n "__fish_tafs_using_subcommand restore" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand restore" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand restore" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand which" -l priority -d 'Priority list, as for `tafs mount --merged` (with GAME_DIR only)' -r
complete -c tafs -n "__fish_tafs_using_subcommand which" -l into -d 'The mod of `tafs mount --merged --into TARGET` (with GAME_DIR only; relative to it): TARGET is the first source, and no source below it' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand which" -s a -l all -d 'Print every source holding the path, highest priority first (the first wins, the others are shadowed)'
complete -c tafs -n "__fish_tafs_using_subcommand which" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand which" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand which" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand diff" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand diff" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand diff" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand completions" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand completions" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand completions" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand man" -s t -l to -d 'Write a page for `tafs` and one for every subcommand (tafs-mount.1, tafs-gaf-dump.1, …) into DIR; without it, print the page of `tafs` itself' -r -F
complete -c tafs -n "__fish_tafs_using_subcommand man" -s v -l verbose -d 'More log output (-v info, -vv debug, -vvv trace)'
complete -c tafs -n "__fish_tafs_using_subcommand man" -s h -l help -d 'Print help'
complete -c tafs -n "__fish_tafs_using_subcommand man" -s V -l version -d 'Print version'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "gaf" -d 'GAF sprite animations: list, export, dump, build, palette, roundtrip'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "taf" -d 'TA: Kingdoms .taf sprites (paletted or truecolor ARGB4444/ARGB1555): the `gaf` commands under kbot\'s name'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "tnt" -d 'TNT maps: describe, minimap, heightmap, image, features, lint, unpack, pack, preview'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "pcx" -d 'PCX pictures (unit pictures, GUI panels): describe, convert, dump, build'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "pal" -d 'Palettes (.pal, TA: Kingdoms palette .pcx): dump, build, gpl'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "3do" -d '3DO models (read-only): describe, dump (OBJ + MTL, textures, pieces.csv, preview.png)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "roundtrip" -d 'Check that every rebuildable asset (GAF, TNT, PCX, PAL) under the given paths rebuilds from its unedited view to identical bytes'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "hpi" -d 'HPI archives (.hpi .ufo .ccx .gp3 .gpf, TA: Kingdoms .hpi): list, info, extract, pack'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "demo" -d 'Write a small game folder to try tafs on (sprites, a map, a unit picture, a palette, a model)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "mount" -d 'Mount a game folder: every .gaf/.tnt/.pcx/.pal/.3do appears as a directory of editable files'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "umount" -d 'Unmount a tafs mount'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "status" -d 'Write-back status of a mount: staged, pending, failed and conflicting edits (with `mount --merged --into`: also what the mod overrides and adds)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "history" -d 'Versions of a binary kept by write-back (newest first)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "restore" -d 'Put back a version of a binary kept by write-back'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "which" -d 'Which source (loose file or archive) a path of the merged game view comes from'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "diff" -d 'What the mod of a `mount --merged --into` changes: its files against what they shadow'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "completions" -d 'Shell completions (bash, zsh, fish) of every command, on standard output'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "man" -d 'Man pages of tafs and every subcommand'
complete -c tafs -n "__fish_tafs_using_subcommand help; and not __fish_seen_subcommand_from gaf taf tnt pcx pal 3do roundtrip hpi demo mount umount status history restore which diff completions man help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from gaf" -f -a "list" -d 'List sequences, frame counts, loop flags and durations'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from gaf" -f -a "export" -d 'Export one sequence as an animated PNG (APNG) or GIF'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from gaf" -f -a "dump" -d 'Write the exploded view: one folder per sequence with CSVs and indexed PNGs (RGBA PNGs for truecolor frames)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from gaf" -f -a "build" -d 'Rebuild a GAF from a dump folder'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from gaf" -f -a "sample" -d 'Write the crate\'s sample GAF (RLE, raw and composite frames) to try the other commands on'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from gaf" -f -a "palette" -d 'The GIMP palette (.gpl) of the palette the GAF resolves to (the one its frames are drawn with), printed or written to --target'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from gaf" -f -a "roundtrip" -d 'Check that decode → encode and dump → build keep what the game reads, for every GAF under the given paths'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from taf" -f -a "list" -d 'List sequences, frame counts, loop flags and durations'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from taf" -f -a "export" -d 'Export one sequence as an animated PNG (APNG) or GIF'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from taf" -f -a "dump" -d 'Write the exploded view: one folder per sequence with CSVs and indexed PNGs (RGBA PNGs for truecolor frames)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from taf" -f -a "build" -d 'Rebuild a GAF from a dump folder'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from taf" -f -a "sample" -d 'Write the crate\'s sample GAF (RLE, raw and composite frames) to try the other commands on'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from taf" -f -a "palette" -d 'The GIMP palette (.gpl) of the palette the GAF resolves to (the one its frames are drawn with), printed or written to --target'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from taf" -f -a "roundtrip" -d 'Check that decode → encode and dump → build keep what the game reads, for every GAF under the given paths'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from tnt" -f -a "describe" -d 'Header, tiles, features, minimap, pads, elevation statistics, top features'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from tnt" -f -a "minimap" -d 'Write the embedded minimap as an indexed PNG'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from tnt" -f -a "heightmap" -d 'Write the elevation grid as an 8-bit grey PNG (one pixel per 16×16 cell)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from tnt" -f -a "image" -d 'Write the raw tile mosaic as an indexed PNG (streamed)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from tnt" -f -a "features" -d 'Print the feature table and every placement as JSON'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from tnt" -f -a "lint" -d 'Check maps: bad-tile-index, unresolved-feature, minimap-flag, minimap-size, duplicate-tiles, unused-tiles'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from tnt" -f -a "unpack" -d 'Explode a map into map.png, heightmap.png, minimap.png, tiles/, tilemap.csv, features.csv and metadata.json'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from tnt" -f -a "pack" -d 'Rebuild a map from an unpacked directory (written atomically; nothing on error)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from tnt" -f -a "preview" -d 'Render the map with feature sprites and numbered start positions (PNG or JPG)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from tnt" -f -a "sample" -d 'Write the crate\'s sample map (16×16 tiles: grass, lake, rocks, paths, placed features) to try the other commands on'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from pcx" -f -a "describe" -d 'Size, layout, header fields, palette and how TA draws the file'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from pcx" -f -a "convert" -d 'PCX → PNG (indexed with the PCX\'s palette) or PNG → PCX (by the target\'s extension)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from pcx" -f -a "dump" -d 'Write the exploded view (image.png + metadata.json; swatch.png, palette.gpl and palette.csv for a 1×1 palette carrier), as the mount shows it'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from pcx" -f -a "build" -d 'Rebuild a PCX from a dump folder'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from pal" -f -a "dump" -d 'Write the exploded view of a .pal or palette .pcx: swatch.png, palette.gpl, palette.csv'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from pal" -f -a "build" -d 'Rebuild a palette file from a dump folder: palette.csv decides; an edited swatch.png is taken with --base (which tells which of the two was edited)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from pal" -f -a "gpl" -d 'The GIMP palette (.gpl) of a .pal or .pcx, printed or written to --target'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from 3do" -f -a "describe" -d 'Pieces (hierarchy, offsets, vertex and primitive counts) and textures found or missing'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from 3do" -f -a "dump" -d 'Write model.obj, model.mtl, pieces.csv, preview.png and textures/*.png, as the mount shows them (textures from the game folder\'s textures/*.gaf, colours from its palette)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from hpi" -f -a "list" -d 'List folders and files with sizes, compression and ratio (no decompression). Every byte of a member name outside printable ASCII is printed `\\xNN` and a backslash `\\\\`, so control characters in a name never reach the terminal; `--raw` prints the names\' bytes as stored'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from hpi" -f -a "info" -d 'Header facts: version, key, counts, sizes, trailer'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from hpi" -f -a "extract" -d 'Extract members into a folder (names sanitised; nothing is written outside it)'
complete -c tafs -n "__fish_tafs_using_subcommand help; and __fish_seen_subcommand_from hpi" -f -a "pack" -d 'Pack a folder into an archive (written atomically)'
